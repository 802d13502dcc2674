/* placeholder: fs/fuse_fs.c is being written */
