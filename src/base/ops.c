/* ops.c - names of the recorded operations and layers (see ops.h). */
#include <string.h>
#include "src/base/ops.h"

static const char *const op_names[FSP_OP__COUNT] = {
	[FSP_OP_LOOKUP] = "lookup",         [FSP_OP_FORGET] = "forget",
	[FSP_OP_GETATTR] = "getattr",       [FSP_OP_SETATTR] = "setattr",
	[FSP_OP_READLINK] = "readlink",     [FSP_OP_MKNOD] = "mknod",
	[FSP_OP_MKDIR] = "mkdir",           [FSP_OP_UNLINK] = "unlink",
	[FSP_OP_RMDIR] = "rmdir",           [FSP_OP_SYMLINK] = "symlink",
	[FSP_OP_RENAME] = "rename",         [FSP_OP_LINK] = "link",
	[FSP_OP_OPEN] = "open",             [FSP_OP_READ] = "read",
	[FSP_OP_WRITE] = "write",           [FSP_OP_FLUSH] = "flush",
	[FSP_OP_RELEASE] = "release",       [FSP_OP_FSYNC] = "fsync",
	[FSP_OP_OPENDIR] = "opendir",       [FSP_OP_READDIR] = "readdir",
	[FSP_OP_READDIRPLUS] = "readdirplus", [FSP_OP_RELEASEDIR] = "releasedir",
	[FSP_OP_FSYNCDIR] = "fsyncdir",     [FSP_OP_STATFS] = "statfs",
	[FSP_OP_SETXATTR] = "setxattr",     [FSP_OP_GETXATTR] = "getxattr",
	[FSP_OP_LISTXATTR] = "listxattr",   [FSP_OP_REMOVEXATTR] = "removexattr",
	[FSP_OP_ACCESS] = "access",         [FSP_OP_CREATE] = "create",
	[FSP_OP_GETLK] = "getlk",           [FSP_OP_SETLK] = "setlk",
	[FSP_OP_FLOCK] = "flock",           [FSP_OP_FALLOCATE] = "fallocate",
	[FSP_OP_COPY_FILE_RANGE] = "copy_file_range", [FSP_OP_LSEEK] = "lseek",
	[FSP_OP_DEV_READ] = "dev_read",     [FSP_OP_DEV_WRITE_DATA] = "dev_write_data",
	[FSP_OP_DEV_WRITE_JOURNAL] = "dev_write_journal",
	[FSP_OP_DEV_WRITE_META] = "dev_write_meta",
	[FSP_OP_DEV_WRITE_CKPT] = "dev_write_ckpt", [FSP_OP_DEV_FLUSH] = "dev_flush",
};

static const char *const layer_names[FSP_LAYER__COUNT] = {
	[FSP_LAYER_TOTAL] = "total",
	[FSP_LAYER_BACKING] = "backing",
	[FSP_LAYER_LAYER] = "layer",
	[FSP_LAYER_EMU] = "emu",
};

const char *fsp_op_name(int op)
{
	if (op < 0 || op >= FSP_OP__COUNT)
		return "unknown";
	return op_names[op];
}

int fsp_op_from_name(const char *name)
{
	for (int i = 0; i < FSP_OP__COUNT; i++)
		if (strcmp(op_names[i], name) == 0)
			return i;
	return -1;
}

const char *fsp_layer_name(int layer)
{
	if (layer < 0 || layer >= FSP_LAYER__COUNT)
		return "unknown";
	return layer_names[layer];
}
