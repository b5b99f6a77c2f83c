/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * pmv_ct_sc.h - pmv_commit_test's scenarios (-t scenario -c CASE): the
 * harness's state (pmv_ct_sc.c), the requests of scenarios the target
 * serves, and the functions one file calls in another (grouped by
 * defining file).  Included by pmv_ct.h.
 */
#ifndef PMV_CT_SC_H
#define PMV_CT_SC_H

/* ================================================================== */
/* Scenarios (-t scenario -c CASE)                                    */
/* ================================================================== */

/*
 * Ways an application could see a commit complete before it is durable,
 * or lose a completion (README.md, Scenarios).  A scenario posts its
 * operations as struct sop, whose address is the context, and checks every
 * completion the moment it is read: a commit's bytes must be in the
 * target's file (-F) and, where the agent persists (sop.oracle), covered
 * by oracle records appended after the commit was posted.
 */

enum sop_kind { SOP_COMMIT = 1, SOP_READ, SOP_WRITE /* plain, placed */,
	SOP_DELIVERY, /* fi_writemsg(FI_DELIVERY_COMPLETE) */
	SOP_DEFAULT   /* fi_write: the endpoint's default op_flags */ };

struct sop {
	struct fi_context2 fictx; /* first: its address is the context */
	enum sop_kind kind;
	unsigned owner;           /* the scenario's name for its endpoint */
	unsigned round;           /* reopen: the round that posted it */
	unsigned slot;            /* the scenario's bookkeeping */
	unsigned ncomp;           /* completions read for it */
	unsigned bad;             /* BAD_* */
	bool posted, oracle, late;
	int err;
	uint64_t flags;
	enum region_id region;
	uint64_t off, mark;       /* mark: oracle records before the post */
	size_t len;
	uint8_t *data;            /* commit: its source; read: destination */
	uint64_t hole;            /* first byte found missing */
	char errtext[96];
};

struct sc_state {
	struct sop *ops;
	size_t nops, cap;
	size_t nposted, ndone;    /* posted, and completed at least once */
	uint8_t *buf;             /* sources and read destinations */
	size_t buf_len, buf_used;
	void *desc;
	struct fid_mr *mr;
	unsigned eagain;          /* posts refused with -FI_EAGAIN, retried */
	unsigned round;           /* reopen: the round running */
	void (*on_done)(struct sop *s);
	const char *no_immed;     /* check: the target raised no FI_IMMED */
};

/* What the operations a filter picks showed, and the first of each kind. */
struct sc_sum {
	unsigned n, posted, lost, ok, errors, dups, bad_flags, not_posted;
	unsigned not_visible, not_covered, covered, late;
	const struct sop *first_bad, *first_err, *first_lost;
};

/* I->T: the initiator's buffer, and what to do (phase). */
struct overtake_req {
	uint64_t addr, key, len;
	uint32_t nwrites;
	uint32_t phase;  /* OT_MOVE: write back, then pmem-a's key as PAGE;
			  * OT_BACK: wait for the writes, then MHP again */
};
#define LS_LEN 4096            /* the late commits */

/*
 * I->T.  LS_SERVE: read the late connection's CQs until the next control
 * message.  LS_ARM: answer LATE_ARMED, read them until pmem-a holds data
 * at off, register pmem-a's key on pmem-b's memory (PAGE), read them
 * again (serving the request), register the key back, answer LATE_DONE.
 */
struct late_req {
	uint32_t phase, len;
	uint64_t off;
	uint8_t data[LS_LEN];
};

/* pmv_ct_sc.c */
extern struct sc_state g_sc;
struct sop *sop_of(void *context);
void sc_setup(size_t nops, size_t buf_len);
uint8_t *sc_bytes(size_t len);
struct sop *sop_new(enum sop_kind kind, unsigned owner,
			   enum region_id region, uint64_t off, size_t len,
			   uint8_t *data);
const char *sop_str(const struct sop *s);
bool sop_covered(const struct sop *s, uint64_t *hole);
void sop_complete(struct sop *s, uint64_t flags, int err,
			 const char *text);
ssize_t sop_post(struct fid_ep *ep, struct sop *s, uint64_t flags,
			uint64_t data);
void sop_post_retry(struct fid_ep *ep, struct sop *s, uint64_t flags,
			   uint64_t data, struct fid_cq *cq);
size_t sc_wait(size_t from, struct fid_cq *cq, int ms);
void sc_drain(struct fid_cq *cq);
void sc_conn_open(struct conn *c, struct fid_cq *tx, struct fid_cq *rx);
bool agent_profile(uint32_t profile);
struct sc_sum sc_sum(bool (*pick)(const struct sop *s));
const char *sc_problem(const struct sc_sum *m);
void sc_verdict_once(const char *check, const struct sc_sum *m,
			    bool errors_ok);
void sc_verdict_durable(const char *check, const struct sc_sum *m);
void sc_verdict_strays(const char *check);
/* Wait scenarios: commits after idle gaps (0 to 1000 ms), each watched. */
#define SC_GAPPED_COMMITS 29  /* the timed commits of one mode */
#define SC_GAPPED_BOUND_MS 50 /* watchdog: far above a commit here (under
			       * 1 ms), under a wait's timeout */
#define SC_GAPPED_SLOW_OK 1   /* commits over it a mode may have (a busy
			       * machine's scheduling hiccup) */
struct sop *sc_gapped_sop(unsigned i, int idle_ms);
void sc_gapped_verdict(const char *check, const char *what, int64_t *us,
		       const int *idle_ms, unsigned n);
void sc_gapped_commits(const char *check, const char *mode,
		       int64_t (*commit)(void *arg, unsigned i, int idle_ms),
		       void *arg);

/* pmv_ct_sc_counters.c */
void sc_counters(void);
void target_on_cntr_watch(const struct cntr_watch_req *req);

/* pmv_ct_sc_delivery.c */
void sc_delivery(void);

/* pmv_ct_sc_iwait.c */
void sc_initiator_waits(void);

/* pmv_ct_sc_late.c */
void target_open_late(struct conn *c, struct fi_info *info);
void target_on_late(const struct late_req *req);
void sc_late_serve(void);

/* pmv_ct_sc_many.c */
void sleep_ms(int ms);
bool pick_all(const struct sop *s);
void sc_many(unsigned n, unsigned per);
void sc_immed_flood(void);
void target_on_flood_check(const struct flood_req *req);

/* pmv_ct_sc_overtake.c */
void target_on_overtake(const struct overtake_req *req);
ssize_t rg_run(struct conn *c, struct sop *s, uint64_t flags);
void sc_overtake(void);

/* pmv_ct_sc_plain.c */
void sc_no_pmem_caps(void);

/* pmv_ct_sc_reopen.c */
void sc_reopen(void);

/* pmv_ct_sc_rereg.c */
void sc_rereg(void);
void sc_move(void);

/* pmv_ct_sc_wait.c */
void target_open_wait(struct conn *c, struct fi_info *info,
			     enum wait_mode mode);
void target_on_wait(const struct idle_req *req);
void sc_wait_modes(void);

#endif /* PMV_CT_SC_H */
