/* placeholder: bench/jobfile.c is being written */
