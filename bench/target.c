/* placeholder: bench/target.c is being written */
