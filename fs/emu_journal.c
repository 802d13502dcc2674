/* placeholder: fs/emu_journal.c is being written */
