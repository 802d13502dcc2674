/* placeholder: bench/profile.c is being written */
