/* placeholder */
#ifndef FSP_FS_EMU_JOURNAL_H
#define FSP_FS_EMU_JOURNAL_H
#endif
