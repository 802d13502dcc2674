/*
 * ops.h - the operations fsprism records, and the latency layers it splits
 * each one into.
 *
 * The FUSE layer records one of the FSP_OP_* values per request; the job
 * engine records FSP_OP_READ / FSP_OP_WRITE for each IO it issues. The
 * numeric values are stored in the database (ops.op) and the names in the
 * op_names table, so append new operations at the end, never renumber.
 */
#ifndef FSP_OPS_H
#define FSP_OPS_H

enum fsp_op {
	FSP_OP_LOOKUP = 0,
	FSP_OP_FORGET,
	FSP_OP_GETATTR,
	FSP_OP_SETATTR,
	FSP_OP_READLINK,
	FSP_OP_MKNOD,
	FSP_OP_MKDIR,
	FSP_OP_UNLINK,
	FSP_OP_RMDIR,
	FSP_OP_SYMLINK,
	FSP_OP_RENAME,
	FSP_OP_LINK,
	FSP_OP_OPEN,
	FSP_OP_READ,
	FSP_OP_WRITE,
	FSP_OP_FLUSH,
	FSP_OP_RELEASE,
	FSP_OP_FSYNC,
	FSP_OP_OPENDIR,
	FSP_OP_READDIR,
	FSP_OP_READDIRPLUS,
	FSP_OP_RELEASEDIR,
	FSP_OP_FSYNCDIR,
	FSP_OP_STATFS,
	FSP_OP_SETXATTR,
	FSP_OP_GETXATTR,
	FSP_OP_LISTXATTR,
	FSP_OP_REMOVEXATTR,
	FSP_OP_ACCESS,
	FSP_OP_CREATE,
	FSP_OP_GETLK,
	FSP_OP_SETLK,
	FSP_OP_FLOCK,
	FSP_OP_FALLOCATE,
	FSP_OP_COPY_FILE_RANGE,
	FSP_OP_LSEEK,
	/* IOs the emulation (fsprism mount --cow/--journal) sends to its store */
	FSP_OP_DEV_READ,          /* any read of the store */
	FSP_OP_DEV_WRITE_DATA,    /* file data, home or CoW destination */
	FSP_OP_DEV_WRITE_JOURNAL, /* journal descriptor, logged block, commit, jsb */
	FSP_OP_DEV_WRITE_META,    /* metadata nodes and allocation bitmaps */
	FSP_OP_DEV_WRITE_CKPT,    /* checkpoint / root block */
	FSP_OP_DEV_FLUSH,         /* cache flush */
	FSP_OP__COUNT
};

/*
 * Layers: "total" is the whole time in fsprism's handler (or, for the job
 * engine, from io_submit to completion); "backing" is the time spent inside
 * system calls on the backing file system (with emulation: the store IO
 * that moves the user's own data); "emu" is the emulation's share beyond
 * that (its CPU, read-modify-write, metadata, journal, checkpoint and flush
 * IO); "layer" is total - backing - emu, fsprism's own work.
 */
enum fsp_layer {
	FSP_LAYER_TOTAL = 0,
	FSP_LAYER_BACKING,
	FSP_LAYER_LAYER,
	FSP_LAYER_EMU,
	FSP_LAYER__COUNT
};

const char *fsp_op_name(int op);       /* "read", "copy_file_range", ... */
int fsp_op_from_name(const char *name); /* -1 if unknown */
const char *fsp_layer_name(int layer); /* "total", "backing", "layer", "emu" */

#endif
