/*
 * handle.h - the inside of a store handle, for the files of src/db only
 * (store.c opens it and writes, results.c reads). Everything outside
 * src/db sees struct fsp_store as an opaque type and never a sqlite3 *.
 */
#ifndef FSP_DB_HANDLE_H
#define FSP_DB_HANDLE_H

#include <sqlite3.h>

struct fsp_store {
	sqlite3 *db;
	char *path;
	/* prepared once per handle (SQLITE_PREPARE_PERSISTENT), finalized at close */
	sqlite3_stmt *ins_many; /* INSERT_ROWS op rows */
	sqlite3_stmt *ins_one;
	sqlite3_stmt *hist_ins;
	sqlite3_stmt *hist_del_bins;
	sqlite3_stmt *bin_ins;
	sqlite3_stmt *step_ins;
	sqlite3_stmt *timeline_ins;
	sqlite3_stmt *segment_ins;
};


#endif
