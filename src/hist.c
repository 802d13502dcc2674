/* placeholder: src/hist.c is being written */
