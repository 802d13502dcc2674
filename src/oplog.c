/* placeholder: src/oplog.c is being written */
