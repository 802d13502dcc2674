/*
 * inject.h - fault and latency injection into the FUSE handlers
 * (`fsprism mount --inject RULES`, docs/inject.md).
 *
 * A rule names operations (the FSP_OP_* names of src/base/ops.h), an
 * optional fnmatch(3) pattern on the path below the mount, and what to do to
 * a matching request: wait a fixed or drawn delay inside the handler's timed
 * window, and/or answer an errno with a probability. Draws come from a
 * per-thread xorshift seeded from the rules' seed and the thread's ordinal,
 * so one thread's sequence of decisions is the same from run to run.
 *
 * The handlers ask only when rules exist (fs->inject != NULL: the one branch
 * an uninjected mount pays); a node's path is matched once, when first
 * addressed, and kept as a mask of the rules it matches; deciding takes no
 * lock and makes no system call.
 */
#ifndef FSP_FS_INJECT_H
#define FSP_FS_INJECT_H

#include <stddef.h>
#include <stdint.h>

#define FSP_INJECT_MAX_RULES 32

struct fsp_inject;

/*
 * Parse RULES (see docs/inject.md). NULL on a bad rule, with a one-line
 * reason naming the bad part in err ("unknown operation 'raed'").
 */
struct fsp_inject *fsp_inject_parse(const char *spec, char *err, size_t errlen);
void fsp_inject_free(struct fsp_inject *inj);

/* The rules as parsed, in canonical form (the run attribute fuse.inject). */
void fsp_inject_format(const struct fsp_inject *inj, char *buf, size_t len);

/* Does any rule of op have a path pattern (then the node's mask matters)? */
int fsp_inject_op_has_path(const struct fsp_inject *inj, int op);

/* Does any rule concern op at all? */
int fsp_inject_op_any(const struct fsp_inject *inj, int op);

/* The rules whose pattern matches path ("/dir/file", "/" the root); rules
 * without a pattern always match. */
uint32_t fsp_inject_match(const struct fsp_inject *inj, const char *path);

/*
 * Decide one request of op on a node matching the rules in mask: the delay
 * to wait (*delay_ns, 0 for none) and the errno to answer (0: serve it).
 * Every matching rule's delay adds up; the first errno drawn wins.
 */
int fsp_inject_decide(const struct fsp_inject *inj, int op, uint32_t mask,
		      uint64_t *delay_ns);

#endif
