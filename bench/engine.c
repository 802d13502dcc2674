/* placeholder: bench/engine.c is being written */
