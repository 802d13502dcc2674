/* placeholder */
#ifndef FSP_FS_FUSE_FS_H
#define FSP_FS_FUSE_FS_H
#endif
