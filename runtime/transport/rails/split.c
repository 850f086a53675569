/*
 * split.c - how the rails transport (rails.c) cuts each message over its
 * rails, and the balancer that learns what each rail should carry from
 * the times of the acknowledgements (wire.c records the samples).
 *
 * Splitting (the policy, coll_rail_policy in coll_plan.h).  A message below
 * the cold threshold goes whole to the alive rail of lowest latency, the
 * first listed among those within RL_LAT_TIE (cold start); a larger one
 * is split over the rails (hot start).  Under
 * split=throughput a message of RL_PULL_BYTES or more is cut into pieces
 * that the rails pull as they drain, each piece to the rail that would
 * finish it first (pull()), so that the rails finish together whatever
 * their speeds, and a rail more than `tolerance` times slower than the
 * best gets none.  Smaller ones, and every message under equal or
 * latency, are split by the shares of the message's size class (log2 of
 * its bytes), each rail's part cut into pieces of at most COLL_RAIL_SLICE
 * bytes.  The data-length table holds each class's shares and per-rail
 * rates, fed by per-rail timers: a split message, once acknowledged,
 * gives each rail's bytes of it and its finish time, from the split to
 * that part's last acknowledgement (rl_sample()).  Every `rebalance` calls
 * each class's samples are folded into its rates and, under
 * split=throughput, move its shares (fold()): toward the bytes each rail
 * carried where pull() split, toward equal finish times elsewhere.  A new
 * class starts from the nearest measured class's shares and, for its
 * first RL_EARLY_FOLDS folds, is folded every RL_FIRST_FOLD messages, not
 * only at rebalances.  The
 * `auto` cold threshold is where one rail and the split take equally long
 * (latency equivalence, the Nezha paper's Eq. 6): alpha_b + S/beta_b =
 * alpha_max + alpha_b + S/sum(beta), the second alpha_b being what the
 * extra piece costs, so S* = alpha_max / (1/beta_b - 1/sum(beta)); until
 * throughputs are measured it is RL_COLD_DEFAULT.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rails_int.h"

/* --- splitting ------------------------------------------------------------ */

static int cls_of(uint64_t bytes)
{
	int c = 0;
	while (bytes > 1 && c < RL_NCLASS - 1)
		bytes >>= 1, c++;
	return c;
}

/* Bytes of a total-byte message for each alive rail to p. */
static void split(rails_tp *t, int p, rl_msg *m, uint64_t part[COLL_MAX_RAILS])
{
	memset(part, 0, sizeof(uint64_t) * COLL_MAX_RAILS);
	int cold_rail = rl_fastest(t, p);
	if (m->total < t->cold || rl_alive_rails(t, p) == 1) {
		part[cold_rail] = m->total;
		return;
	}
	rl_class *k = &t->cls[m->cls];
	double sum = 0;
	for (int r = 0; r < t->nrails; r++)
		if (rl_lk(t, p, r)->up)
			sum += k->share[r];
	if (sum <= 0) {
		part[cold_rail] = m->total;
		return;
	}
	int big = -1;
	uint64_t given = 0;
	for (int r = 0; r < t->nrails; r++) {
		if (!rl_lk(t, p, r)->up)
			continue;
		part[r] = (uint64_t)((double)m->total * k->share[r] / sum);
		if (big < 0 || k->share[r] > k->share[big])
			big = r;
	}
	for (int r = 0; r < t->nrails; r++) {
		if (r != big && part[r] < RL_MIN_PIECE)
			part[r] = 0;
		given += part[r];
	}
	part[big] += m->total - given;
	m->hot = 1;
}

static void fold(rails_tp *t, rl_class *k);
static void seed(rails_tp *t, rl_class *k);
static int first_fold_due(const rl_class *k);

/* Bytes of p's link on rail r posted and not yet acknowledged. */
static uint64_t unacked(rails_tp *t, int p, int r)
{
	uint64_t b = 0;
	for (rl_piece *pc = rl_lk(t, p, r)->out; pc; pc = pc->lnext)
		if (!pc->acked)
			b += pc->len;
	return b;
}


/* Post piece pc of m on rail r, noting what a sample needs: the rail's
 * bytes of m, and whether the rail was idle.  A rail that sat idle
 * restarts its TCP connection from slow start
 * (tcp_slow_start_after_idle), and one never used yet starts there: a
 * message that wakes one would be a sample of TCP's ramp, not of the
 * rail.  In a sweep of sizes the second rail idles through every cold
 * size, so the first message of each new class would make it look slower
 * than it is. */
static int post_part(rails_tp *t, int p, rl_msg *m, rl_piece *pc, int r)
{
	rl_link *L = rl_lk(t, p, r);
	pc->woke = !L->out && (!L->idle_ns || rt_now_ns() - L->idle_ns > RL_IDLE_NS);
	m->warmup |= pc->woke;
	m->part[r] += pc->len;
	pc->queued = 0;
	return rl_post_piece(t, p, m, pc, r);
}

/* split=throughput, messages of RL_PULL_BYTES and up: hand p's queued
 * pieces, oldest message first, to the rails as they have room.  Each
 * piece goes to the link that would finish it first, judged by its
 * unacknowledged bytes over its drain (the rate its pieces are
 * acknowledged at, rl_drain_sample()), and only while that link has less
 * than RL_PULL_NS of work unacknowledged: the earliest-completion-first
 * rule of multipath schedulers.  So a rail takes what it drains, the
 * rails finish a message together whatever their speeds or their
 * moment's luck, and a slower rail takes a piece only when it would still
 * finish it before the best could.  Until every alive link's drain is
 * known, each piece goes to the link with the fewest bytes
 * unacknowledged, up to RL_PULL_SLICES slices, so that a link not
 * measured gets pieces and is measured (a rail that came back after a
 * failover must be, or it would stay out).  The class's shares do not
 * stand in for the drains: they came from another size (a new class is
 * seeded) or from what pull() gave each rail, and estimates from them
 * spiral (below).
 *
 * A link more than `tolerance` times slower than the best, both by its
 * drain and by the class's shares (the bytes it carried lately), takes
 * nothing: the drain alone flaps, since a shaper's burst after each idle
 * moment makes the rail that sends most look faster still (200 + 60
 * Mbit/s read 22-36 and 5-10 MB/s), and the shares alone spiral (a rail
 * given less carries less).  Its drain is forgotten RL_RETRY_NS later
 * (rl_drain_of()), the shares stand in again, and it is measured anew.
 *
 * Why not fixed shares, as split=equal does: with several messages in
 * flight every rail has a queue, and a split fixed when the message
 * starts leaves whichever rail had a bad moment (a TCP loss, a shaper's
 * burst spent) behind for the rest of the queue.  On two equal 200 Mbit/s
 * rails (n = 4, 64 MiB ring, 1 MiB messages) equal 50/50 splits finished
 * their two halves on average 2.1x apart.  Why the drain and not the
 * shares as the speed: ECF on shares learnt from what it gave each rail
 * feeds on itself (the fast rail's window fills first, the slow one gets
 * the overflow, carries less than it could, and its share falls).
 *
 * Why RL_PULL_NS is short (5 ms, with pieces of 32 KiB, start()): a
 * link that may hold more than a message's worth takes the whole
 * message at once, and pulling becomes a split fixed at the start by
 * that moment's drains, which is what pulling exists to avoid.  With 20
 * ms and pieces of a sixteenth, a 512 KiB message (a ring at n = 8, 4
 * MiB) was handed out whole as it started, and a 1 MiB one (the tcp
 * child's largest) had pieces of 64 KiB, 8.7 ms each of a 60 Mbit/s
 * rail.  A link that holds nothing takes a piece whatever its size, so
 * a rail never waits for work; the rest of a message waits for the
 * first acknowledgements, which is what keeps it with the rail that
 * drains it.  On 200 + 60 Mbit/s, ring, paired rounds against 20 ms
 * and pieces of a sixteenth: n = 8 4 MiB 1.03-1.05 of the summed
 * capacity against 0.97-1.01, 16 MiB 1.04-1.06 against 0.96-0.97, 64
 * MiB 1.01-1.02 against 0.96-0.98; n = 4 4 MiB 0.99-1.02 against 0.95;
 * two 200 Mbit/s rails at n = 8, 4 MiB 2.02-2.07x one rail against
 * 1.76-2.04x, 16 MiB 2.05-2.06x against 1.94-1.95x (1 MiB messages were
 * cut in 44 KiB pieces in those rounds; tests/results/rails.md has the table).
 * 2.5 ms was too short (n = 8 4 MiB: 0.91-0.95): a link then idles for
 * each acknowledgement's round trip. */
static int pull(rails_tp *t, int p)
{
	uint64_t win = (uint64_t)RL_PULL_SLICES * t->slice;
	int64_t now = rt_now_ns();
	for (rl_msg *m = t->peer[p].head; m && m->started; m = m->next) {
		rl_class *k = &t->cls[m->cls];
		for (; m->next_pull < m->npieces; m->next_pull++) {
			rl_piece *pc = &m->p[m->next_pull];
			if (!pc->queued)
				continue;
			/* each alive link's drain and unacknowledged bytes; the best drain and share */
			int nc = 0, drained = 1;
			double d[COLL_MAX_RAILS], top = 0, top_share = 0;
			uint64_t b[COLL_MAX_RAILS];
			for (int r = 0; r < t->nrails; r++) {
				rl_link *L = rl_lk(t, p, r);
				if (!L->up)
					continue;
				nc++;
				d[r] = rl_drain_of(L, now);
				b[r] = unacked(t, p, r);
				drained &= d[r] > 0;
				top = d[r] > top ? d[r] : top;
				top_share = k->share[r] > top_share ? k->share[r] : top_share;
			}
			if (!nc)
				return COLL_OK;   /* every rail to p is down: rl_need() says so */
			int best = -1;
			double best_t = 0;
			for (int r = 0; r < t->nrails; r++) {
				if (!rl_lk(t, p, r)->up)
					continue;
				if (drained && t->pol.tolerance > 0 && d[r] * t->pol.tolerance < top &&
				    k->share[r] * t->pol.tolerance < top_share)
					continue;   /* too slow, by its drain now and by what it carried */
				double est = (double)(b[r] + pc->len) / (drained ? d[r] : 1);
				if (best < 0 || est < best_t)
					best = r, best_t = est;
			}
			if (b[best] && (drained ? (double)b[best] > RL_PULL_NS * d[best] : b[best] + pc->len > win))
				return COLL_OK;   /* the link that would finish it first is full: later */
			if (t->debug > 3 && t->rank == 0) {   /* every piece pulled: where, and what decided it */
				fprintf(stderr, "pull seq %u piece %d to %d on rail %d:", m->seq, m->next_pull, p, best);
				for (int r = 0; r < t->nrails; r++)
					if (rl_lk(t, p, r)->up)
						fprintf(stderr, " rail %d drain %.1f MB/s unacked %llu", r, d[r] * 1e3,
						        (unsigned long long)b[r]);
				fputc('\n', stderr);
			}
			int rc = post_part(t, p, m, pc, best);
			if (rc)
				return rc;
		}
	}
	return COLL_OK;
}

/* Cut m into pieces: each rail's part[r] into pieces of at most psz bytes
 * in rail order, posted on that rail, or (queued) the whole message into
 * pieces that pull() hands out. */
static void cut(rl_msg *m, const uint64_t part[COLL_MAX_RAILS], int nrails, uint64_t psz, int queued)
{
	uint64_t off = 0;
	m->npieces = 0;
	for (int r = 0; r < nrails; r++) {
		for (uint64_t left = part[r]; left;) {
			uint64_t len = left < psz ? left : psz;
			if (left - len > 0 && left - len < 64)
				len = left - 64;   /* no piece under 64 bytes: piece 0 must hold the header */
			rl_piece *pc = &m->p[m->npieces];
			memset(pc, 0, sizeof *pc);
			pc->m = m;
			pc->rail = queued ? -1 : r;
			pc->queued = queued;
			pc->off = (uint32_t)off;
			pc->len = (uint32_t)len;
			m->npieces++;
			off += len;
			left -= len;
		}
	}
	for (int i = 0; i < m->npieces; i++) {
		rl_piece *pc = &m->p[i];
		pc->h.type = RH_DATA;
		pc->h.magic = RL_MAGIC;
		pc->h.seq = m->seq;
		pc->h.slice = (uint16_t)i;
		pc->h.nslices = (uint16_t)m->npieces;
		pc->h.off = pc->off;
		pc->h.total = m->total;
		pc->h.len = pc->len;
		if (i == 0 && !m->copy && m->req->iovcnt == 2)
			memcpy(&pc->xh, m->req->iov[0].iov_base, sizeof pc->xh);
	}
	m->started = 1;
}

/* Start message m to p: cut it into pieces and post them, or under
 * split=throughput queue them for pull(). */
static int start(rails_tp *t, int p, rl_msg *m)
{
	uint64_t part[COLL_MAX_RAILS];
	m->cls = cls_of(m->total);
	rl_class *k = &t->cls[m->cls];
	if (!k->used) {
		k->used = 1;
		seed(t, k);
	} else if (first_fold_due(k)) {
		fold(t, k);
	}
	split(t, p, m, part);
	m->start_ns = rt_now_ns();
	m->pulled = m->hot && t->pol.split == COLL_SPLIT_THROUGHPUT && m->total >= RL_PULL_BYTES;
	/* A copy lets the executor's send complete once the child has written
	 * every piece (copied_out) instead of a round trip later, when the
	 * last is acknowledged: on a ring each step's send waited for that
	 * acknowledgement, a receiver's wake-up included (n = 4, 4 MiB on 200
	 * + 60 Mbit/s rails, 1 MiB messages: 0.95-0.98 of the sum against
	 * 0.94-0.97, ten paired rounds).  Only where nothing is timed from
	 * the split on the assumption that every rail starts the message
	 * idle: pull() hands pieces out by what each link still has
	 * unacknowledged, and a message on one rail is not a sample.  A
	 * message split by shares is still completed by its
	 * acknowledgements, so that the next one starts on rails that are
	 * done: letting it start early (n = 8, 4 MiB, 512 KiB messages split
	 * by shares) put the previous message's tail into its rails' times,
	 * and those times steer the shares: 0.87-0.90 of the sum against
	 * 0.91-0.93.  And only for the oldest message to p: behind others in
	 * flight the round trip is hidden anyway (the executor waits for the
	 * last of a step's sends), and the copy costs by the byte.  A ring at
	 * n = 8, 64 MiB, sends a step as several 1 MiB messages; copying
	 * every one made it 6-7% slower (equal rails, 8 ranks on 2 cores),
	 * copying the oldest 1-3% faster.  Up to RL_COPY_MAX, for the same
	 * reason. */
	if (!m->copy && (m->pulled || !m->hot) && m->total <= RL_COPY_MAX && t->peer[p].head == m) {
		if (!(m->copy = malloc(m->total)))
			return rt_err(t->base.comm, COLL_ERR_NOMEM, "out of memory");
		rl_gather(m->copy, m->req);
	}
	if (m->pulled) {
		/* Small pieces, so that the rails' last pieces of a message end
		 * close together (on 200 + 60 Mbit/s a 32 KiB piece is 4.4 ms
		 * of the slow rail), and a link can be given less than
		 * RL_PULL_NS of work (pull()).  At most RL_PULL_PIECES of them,
		 * or pieces of a slice (no piece is larger, so the child and
		 * the receiver see nothing new); rl_post_send() makes room. */
		uint64_t psz = (m->total + RL_PULL_PIECES - 1) / RL_PULL_PIECES;
		psz = psz < RL_PULL_PIECE ? RL_PULL_PIECE : psz;
		psz = psz > t->slice ? t->slice : psz;
		uint64_t all[COLL_MAX_RAILS] = {m->total};
		cut(m, all, 1, psz, 1);
		return pull(t, p);
	}
	cut(m, part, t->nrails, t->slice, 0);
	m->next_pull = m->npieces;
	for (int i = 0; i < m->npieces; i++) {
		int r = m->p[i].rail;
		if (!rl_lk(t, p, r)->up && (r = rl_survivor(t, p, -1)) < 0)
			break;   /* every rail to p died while posting: reported by rl_need() */
		int rc = post_part(t, p, m, &m->p[i], r);
		if (rc)
			return rc;
	}
	return COLL_OK;
}

static int rebalance(rails_tp *t);

/* Start the messages to p that credit allows. */
int rl_pump(rails_tp *t, int p)
{
	rl_peer *pr = &t->peer[p];
	for (rl_msg *m = pr->head; m; m = m->next) {
		if (m->started)
			continue;
		if ((int32_t)(m->seq - pr->credit) >= 0 || rl_alive_rails(t, p) == 0)
			break;
		if ((int32_t)(t->base.comm->seq - t->bal_seq) >= t->pol.rebalance_calls)
			rebalance(t);
		int rc = start(t, p, m);
		if (rc)
			return rc;
	}
	return pull(t, p);
}




/* --- the balancer --------------------------------------------------------- */

/* Shares of one class.  equal and latency: from the policy and the
 * latencies.  throughput: the balancer's own (fold), started equal
 * (Nezha's uniform start).  The tolerance is pull()'s to apply, on
 * messages of RL_PULL_BYTES and up (smaller ones' times are mostly
 * latency, and tell little of a rail's speed), by the links' drains and
 * the shares together: judged here, on the shares alone, it excluded a
 * rail for the rest of the job on one bad fold. */
void rl_shares(rails_tp *t, rl_class *k)
{
	double w[COLL_MAX_RAILS] = {0}, sum = 0;
	for (int r = 0; r < t->nrails; r++) {
		switch (t->pol.split) {
		case COLL_SPLIT_EQUAL:
			w[r] = 1;
			break;
		case COLL_SPLIT_LATENCY:
			w[r] = t->rail[r].lat_ns > 0 ? 1 / t->rail[r].lat_ns : 1;
			break;
		default:
			w[r] = k->share[r];
			break;
		}
		sum += w[r];
	}
	for (int r = 0; r < t->nrails; r++)
		k->share[r] = sum > 0 ? w[r] / sum : 1.0 / t->nrails;
}

/* A class's samples since its last fold go into its rates (an average
 * with what it had: for the failover check, the cold threshold and the
 * survivor's choice) and, under split=throughput, move its shares.
 *
 * Classes of RL_PULL_BYTES and up go out by pull(), which gives each rail
 * what it drains: their shares move halfway toward the fractions of the
 * bytes each rail carried, the rails' relative speeds at that size: the
 * data-length table reports them, pull() judges the tolerance by them
 * with the drains, and smaller classes are seeded from them.
 *
 * Smaller classes are split by their shares, and there the balancer is a
 * controller on finish times.  Each sampled message gives every rail's
 * finish time T_r and its log-imbalance d_r = log T_r - mean over rails
 * of log T.  A fold scales each share by exp(-RL_GAIN * mean d_r): with
 * T_r proportional to share_r / speed_r a gain of 1 would land on equal
 * finish times in one step, but the first messages after a change still
 * carry the queue the old shares left, and it overshot; halfway settles
 * in two folds.  That is for a class's first RL_COARSE_FOLDS folds,
 * which bring it from its seed near the balance, unless its seed was a
 * class already past them (settled_seed: a sweep's next size starts
 * near the balance, and halfway moves on 8 messages only add noise
 * there).  Near the balance, finish times are steeper than share /
 * speed: a rail a little over its share lags more on every ring step,
 * since each step's part queues behind the last one's (on 200 + 60
 * Mbit/s, n = 8, 512 KiB messages, a share 2 points past the balance
 * read that rail 1.3-1.5x late), and halfway steps swung the shares
 * 0.75 <-> 0.79 around 0.77 for good, the slow rail's part 9% too large
 * every other fold.  Later folds move by RL_GAIN_LATE; the early folds
 * after the coarse ones (every RL_FIRST_FOLD messages, up to
 * RL_EARLY_FOLDS) let a rank that the coarse ones left short of the
 * balance get there within its first few calls.  It moves only when
 * some mean d_r is beyond twice its
 * standard error and 3%, so that the scatter of 8 ranks on 2 cores is
 * left alone instead of followed.  (That controller ran every class
 * before pull(): from 1 MiB up, with several messages queued, the finish
 * times were mostly queue, and two equal rails ran 1.74-1.79x the single
 * rail where `equal` ran 1.77-2.02x.) */
static void fold(rails_tp *t, rl_class *k)
{
	int move = 0, pulled = (1ull << (k - t->cls)) >= RL_PULL_BYTES;
	double f[COLL_MAX_RAILS];
	uint64_t bytes = 0;
	for (int r = 0; r < t->nrails; r++) {
		bytes += k->sb[r];
		f[r] = 1;
		if (k->nl[r] < 2)
			continue;
		double n = k->nl[r], mean = k->sl[r] / n, var = (k->sll[r] - n * mean * mean) / (n - 1);
		double se = sqrt((var > 0 ? var : 0) / n);
		if (fabs(mean) > 2 * se && fabs(mean) > RL_MOVE_MIN)
			move = 1;
		double gain = k->samples < RL_COARSE_FOLDS && !k->settled_seed ? RL_GAIN : RL_GAIN_LATE;
		f[r] = exp(-gain * fmax(-RL_MOVE_MAX, fmin(RL_MOVE_MAX, mean)));
	}
	for (int r = 0; r < t->nrails && t->pol.split == COLL_SPLIT_THROUGHPUT; r++) {
		if (pulled && bytes)
			k->share[r] = 0.5 * k->share[r] + 0.5 * (double)k->sb[r] / (double)bytes;
		else if (!pulled && move)
			k->share[r] *= f[r];
	}
	if (t->debug > 1 && t->rank == 0 && k->nsb)
		fprintf(stderr, "fold cls %d samples %d %s share %.3f,%.3f\n", (int)(k - t->cls), k->nsb,
		        pulled ? "pulled" : move ? "moved" : "kept", k->share[0], t->nrails > 1 ? k->share[1] : 0.0);
	memset(k->sl, 0, sizeof k->sl);
	memset(k->sll, 0, sizeof k->sll);
	memset(k->nl, 0, sizeof k->nl);
	int measured = 0;
	for (int r = 0; r < t->nrails; r++) {
		if (k->sns[r] > 0) {
			double s = (double)k->sb[r] / (double)k->sns[r];
			k->rate[r] = k->rate[r] > 0 ? 0.5 * k->rate[r] + 0.5 * s : s;
			measured = 1;
		}
		k->sb[r] = 0, k->sns[r] = 0;
	}
	k->nsb = 0;
	k->samples += (uint64_t)measured;
	rl_shares(t, k);
}

/* A class not measured yet starts from the shares and rates of the
 * nearest class that was (the larger on a tie), not from equal shares: on
 * unequal rails equal shares make the slow rail the bottleneck (a sweep
 * of sizes would run every size's first calls at a fraction of what it
 * could). */
static void seed(rails_tp *t, rl_class *k)
{
	int c = (int)(k - t->cls), best = -1;
	for (int d = 1; d < RL_NCLASS && best < 0; d++) {
		if (c + d < RL_NCLASS && t->cls[c + d].samples)
			best = c + d;
		else if (c - d >= 0 && t->cls[c - d].samples)
			best = c - d;
	}
	if (best >= 0) {
		memcpy(k->rate, t->cls[best].rate, sizeof k->rate);
		memcpy(k->share, t->cls[best].share, sizeof k->share);
	}
	k->settled_seed = best >= 0 && t->cls[best].samples >= RL_COARSE_FOLDS;
	rl_shares(t, k);
}

/* A young class (fewer than RL_EARLY_FOLDS folds) is folded every
 * RL_FIRST_FOLD sampled messages, not only at rebalances, which may be
 * `rebalance` calls away: a sweep of sizes gives each only a few calls,
 * and from a poor start the shares take a few folds to settle. */
static int first_fold_due(const rl_class *k)
{
	return k->samples < RL_EARLY_FOLDS && k->nsb >= RL_FIRST_FOLD;
}

/* Fold every class's samples since the last rebalance into its rates,
 * and recompute shares and the auto cold threshold. */
static int rebalance(rails_tp *t)
{
	t->bal_seq = t->base.comm->seq;
	for (int c = 0; c < RL_NCLASS; c++)
		fold(t, &t->cls[c]);
	double beta[COLL_MAX_RAILS] = {0};
	for (int r = 0; r < t->nrails; r++)
		beta[r] = rl_rail_rate(t, r);   /* the largest class measured: the closest to bandwidth */
	for (int c = 0; c < RL_NCLASS; c++)
		if (!t->cls[c].samples)
			seed(t, &t->cls[c]);
	if (t->pol.cold_bytes != COLL_COLD_AUTO) {
		t->cold = t->pol.cold_bytes == COLL_COLD_ALWAYS ? UINT64_MAX : (uint64_t)t->pol.cold_bytes;
		return COLL_OK;
	}
	/* Latency equivalence (see the top of the file). */
	double bmax = 0, bsum = 0, amax = 0;
	for (int r = 0; r < t->nrails; r++)
		if (beta[r] > bmax)
			bmax = beta[r];
	for (int r = 0; r < t->nrails; r++) {
		if (beta[r] <= 0 ||
		    (t->pol.split != COLL_SPLIT_EQUAL && t->pol.tolerance > 0 && bmax / beta[r] > t->pol.tolerance))
			continue;
		bsum += beta[r];
		if (t->rail[r].lat_ns > amax)
			amax = t->rail[r].lat_ns;
	}
	/* Nothing measured yet, or one rail within the tolerance (splits then
	 * give the others nothing where it matters): the default threshold.
	 * Never `always`: smaller classes must still be split, and measured,
	 * for a rail to come back. */
	if (bmax <= 0 || bsum <= bmax) {
		t->cold = RL_COLD_DEFAULT;
		return COLL_OK;
	}
	double s = amax / (1 / bmax - 1 / bsum);
	t->cold = s < RL_MIN_PIECE ? RL_MIN_PIECE : s > (double)(1ull << 40) ? (1ull << 40) : (uint64_t)s;
	return COLL_OK;
}
