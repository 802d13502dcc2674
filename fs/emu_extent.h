/* placeholder */
#ifndef FSP_FS_EMU_EXTENT_H
#define FSP_FS_EMU_EXTENT_H
#endif
