/* placeholder: bench/pattern.c is being written */
