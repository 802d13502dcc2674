/* placeholder: fs/emu_extent.c is being written */
