/*
 * diagnose.h - the diagnosis of one compare run, printed by `fsprism
 * diagnose` and at the end of every `fsprism compare` (diagnose.c).
 */
#ifndef FSP_CLI_DIAGNOSE_H
#define FSP_CLI_DIAGNOSE_H

#include <stdint.h>
#include <stdio.h>

struct fsp_store;

/*
 * Read the evidence of compare run cmp_run (every round of every target,
 * its device rows, its mounts' FUSE rows, its replays) and print the
 * verdicts as a table or one JSON object (format FSP_DIAGNOSE_*). 0, or -1 with the reason
 * printed on stderr as "fsprism CMD: ...".
 */
#define FSP_DIAGNOSE_TABLE 0 /* the table, folded to 100 columns */
#define FSP_DIAGNOSE_JSON 1
#define FSP_DIAGNOSE_WIDE 2  /* the table, lines as long as they are */
#define FSP_DIAGNOSE_SUMMARY 3 /* the answer first: compare's default screen, folded */
int fsp_diagnose_print(FILE *out, struct fsp_store *st, int64_t cmp_run, int format,
		       const char *cmd);

#endif
