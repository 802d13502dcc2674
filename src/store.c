/* placeholder: src/store.c is being written */
