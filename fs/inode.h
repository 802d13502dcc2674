/* placeholder */
#ifndef FSP_FS_INODE_H
#define FSP_FS_INODE_H
#endif
