/* placeholder */
#ifndef FSP_FS_EMU_ALLOC_H
#define FSP_FS_EMU_ALLOC_H
#endif
