/* placeholder: fs/emu_alloc.c is being written */
