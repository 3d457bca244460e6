/* cp_ws.c - WebSocket /flow sessions on D2's codec (cp_ws_codec.h).
 *
 * A session receives binary messages of 1..N whole aeon frames
 * (fg_batch_decode validates the whole message first), hands every frame to
 * the engine and answers each one with a status frame (stream 0xFFFE), one
 * per binary message, unless the upgrade asked status=0. A message that is
 * malformed as a whole is answered with one status (outcome "malformed",
 * reason in the status), counted as one malformed frame under that reason
 * (cp_engine_count_malformed), and the session continues. Resolved seeds of the
 * subscribed layers are pushed as one binary message each. A session opened
 * with /flow?layer=L is bound to destination layer L: its frames are for L
 * and their stream's low 4 bits must equal L & 0x0F (wire.md section 3).
 *
 * Backpressure: reading pauses while the connection's send queue is above
 * half its bound (cp_conn.c); a push that would take the queue over the bound
 * drops the session with 1008 ("slow consumer") instead of growing it.
 * Close: a peer's close is echoed with its code and the connection closes
 * after the flush; protocol violations get the codec's close code
 * (1002/1003/1007/1009); idle sessions get 1001.
 *
 * Loop thread only. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cp_epoch_guard.h"
#include "cp_log.h"
#include "cp_server.h"

#define CP_WS_READ_MAX (256u * 1024u)

/* The session's deadline. Between messages: the idle timeout. While a
 * message (or control frame) is unfinished: it must keep up [tls]
 * body_min_rate after a grace of handshake_timeout_ms from its first bytes,
 * as a request body must (cp_conn_body_deadline), else cp_conn_tick closes
 * the session (1008): a message dripped frame by frame cannot hold the
 * connection and its message buffer for as long as traffic keeps coming. */
static void ws_deadline(struct cp_conn *c)
{
	const struct fg_config *cfg = c->srv->cfg;
	uint64_t part = cp_ws_rx_partial(&c->ws.rx);
	if (!part) {
		c->ws.msg_t0 = 0;
		cp_conn_set_deadline(c, CP_DL_IDLE, (uint64_t)cfg->idle_timeout_ms * 1000000ull);
		return;
	}
	uint64_t now = cp_now_ns();
	if (!c->ws.msg_t0)
		c->ws.msg_t0 = now;
	uint64_t rate = cfg->body_min_rate ? cfg->body_min_rate : 1;
	/* part <= 2 * ws_max_message (64 MiB at most): no overflow in ns. */
	uint64_t due = c->ws.msg_t0 + (uint64_t)cfg->handshake_timeout_ms * 1000000ull + part * 1000000000ull / rate;
	cp_conn_set_deadline(c, CP_DL_MESSAGE, due > now ? due - now : 1);
}

void cp_ws_on_message_timeout(struct cp_conn *c)
{
	struct cp_server *s = c->srv;
	if (c->read_paused) {
		/* We stopped reading (cp_conn.h invariant 3: the peer is slow to
		 * take its answers): the wait is ours, not the message's. The
		 * idle timeout rules until we read again (it moves only while the
		 * peer takes our output, as for any session); the message's clock
		 * starts again with the next bytes we read. */
		c->ws.msg_t0 = 0;
		cp_conn_set_deadline(c, CP_DL_IDLE, (uint64_t)s->cfg->idle_timeout_ms * 1000000ull);
		return;
	}
	s->st.ws_message_timeouts++;
	cp_info("conn %s: WebSocket message of %llu bytes so far slower than %u bytes/s: closing", c->peer,
		(unsigned long long)cp_ws_rx_partial(&c->ws.rx), s->cfg->body_min_rate);
	cp_ws_close(c, CP_WS_CLOSE_POLICY, "message too slow");
}

void cp_ws_start(struct cp_conn *c, const struct cp_flow_query *q)
{
	struct cp_server *s = c->srv;
	c->state = CP_CONN_WS;
	c->ws.sub = *q;
	c->ws.send_status = q->status;
	struct cp_ws_rx_cfg rc = {.max_message = s->cfg->ws_max_message, .accept_text = false};
	cp_ws_rx_init(&c->ws.rx, &rc);
	/* The codec reassembles messages in its own bounded buffer; ours only
	 * holds what one read delivered. */
	c->in_max = CP_WS_READ_MAX;
	cp_conn_list_add(&s->ws_list, c);
	s->st.ws_sessions++;
	ws_deadline(c);
	cp_info("conn %s: /flow session role=%s layers=%u status=%d bound_layer=%d", c->peer, c->role ? c->role : "-",
		q->n_layers, q->status, q->layer_bound ? (int)q->bound_layer : -1);
}

void cp_ws_fini(struct cp_conn *c)
{
	if (c->state != CP_CONN_WS)
		return;
	cp_ws_rx_fini(&c->ws.rx);
	free(c->ws.out);
	c->ws.out = NULL;
	c->ws.out_len = c->ws.out_cap = 0;
}

/* Queue one server frame (header + payload) into the TLS output. */
static int ws_put(struct cp_conn *c, uint8_t opcode, const void *payload, size_t len)
{
	uint8_t hdr[CP_WS_SERVER_HDR_MAX];
	ssize_t h = cp_ws_hdr_encode(opcode, len, hdr, sizeof(hdr));
	if (h < 0)
		return -EINVAL;
	int r = cp_conn_put(c, hdr, (size_t)h);
	if (r == 0 && len)
		r = cp_conn_put(c, payload, len);
	return r;
}

void cp_ws_close(struct cp_conn *c, uint16_t code, const char *reason)
{
	if (cp_conn_is_dead(c))
		return;
	if (!c->ws.close_sent) {
		uint8_t f[CP_WS_SERVER_HDR_MAX + CP_WS_CONTROL_MAX];
		ssize_t n = cp_ws_close_encode(code, reason, f, sizeof(f));
		/* A close frame is never refused for lack of room: it is tiny
		 * and it ends the session. */
		if (n > 0 && cp_conn_put(c, f, (size_t)n) == 0)
			c->ws.close_sent = true;
		cp_info("conn %s: /flow closing %u %s (in %llu msgs %llu frames, out %llu msgs)", c->peer, code,
			reason ? reason : "", (unsigned long long)c->ws.msgs_in, (unsigned long long)c->ws.frames_in,
			(unsigned long long)c->ws.msgs_out);
	}
	cp_conn_list_del(&c->srv->ws_list, c);
	cp_conn_close_after_flush(c, "websocket close");
}

/* Append one status message (status frame in a binary WS message) to the
 * batch of the message being processed, or send it now (lanes mode). */
static void ws_status(struct cp_conn *c, const struct fg_status *st)
{
	if (!c->ws.send_status || c->ws.close_sent)
		return;
	uint8_t fr[FG_HDR_LEN + FG_STATUS_PAYLOAD_LEN];
	ssize_t n = fg_status_encode(st, fr, sizeof(fr));
	if (n < 0) {
		cp_err("conn %s: status not encodable: %s", c->peer, fg_reason_name((int)n));
		return;
	}
	if (ws_put(c, CP_WS_OP_BINARY, fr, (size_t)n) < 0) {
		cp_conn_close(c, "cannot write status");
		return;
	}
	c->ws.msgs_out++;
	c->srv->st.ws_msgs_out++;
	if (!c->in_process)
		cp_conn_flush_later(c);
}

void cp_ws_on_done(struct cp_conn *c, const struct cp_engine_result *r) { ws_status(c, &r->status); }

/* The destination layer the upgrade bound this session to (/flow?layer=L),
 * or FG_LAYER_UNBOUND. */
static int32_t ws_bound(const struct cp_conn *c)
{
	return c->ws.sub.layer_bound ? (int32_t)c->ws.sub.bound_layer : FG_LAYER_UNBOUND;
}

static void ws_refused(struct cp_conn *c, const uint8_t *frame, size_t len, enum fg_outcome o, int reason)
{
	struct fg_status st;
	memset(&st, 0, sizeof(st));
	st.outcome = (uint8_t)o;
	st.line = FG_LINE_NONE;
	st.reason = (uint16_t)(reason > 0 && reason < FG_R__COUNT ? reason : 0);
	/* As the ingest answers a malformed frame: never a reason to skip the
	 * canonical hop, and the current epoch. */
	st.facts = FG_FACT_SHADOW;
	st.model_epoch = c->srv->engine->epoch;
	if (len >= FG_HDR_LEN) {
		enum fg_band band;
		uint16_t layer;
		st.token_seq = fg_be32(frame + 2);
		if (fg_stream_classify_at(&c->srv->engine->bands, fg_be16(frame), ws_bound(c), &band, &layer) == 0)
			st.dst_layer = layer;
		else if (c->ws.sub.layer_bound)
			st.dst_layer = c->ws.sub.bound_layer;
	}
	ws_status(c, &st);
}

static void ws_message(struct cp_conn *c, const uint8_t *data, size_t len)
{
	struct cp_server *s = c->srv;
	c->ws.msgs_in++;
	s->st.ws_msgs_in++;
	if (c->role && !strcmp(c->role, "consumer")) {
		cp_ws_close(c, CP_WS_CLOSE_POLICY, "role consumer may not send frames");
		return;
	}
	struct fg_frame one;
	int n = fg_batch_decode(data, len, &one, 0);
	if (n < 0) {
		cp_debug("conn %s: malformed message: %s", c->peer, fg_reason_name(n));
		/* One malformed frame under the codec reason the status carries. */
		cp_engine_count_malformed(s->engine, n);
		ws_refused(c, data, len, FG_O_MALFORMED, -n);
		return;
	}
	size_t off = 0;
	const struct fg_bm_src from = cp_conn_source(c);
	for (int i = 0; i < n && !cp_conn_is_dead(c) && !c->ws.close_sent; i++) {
		struct fg_frame f;
		ssize_t r = fg_frame_decode(data + off, len - off, FG_TRANSPORT_MESSAGE, &f);
		if (r <= 0)
			break; /* cannot happen: validated above */
		c->ws.frames_in++;
		s->st.ws_frames_in++;
		enum fg_band band;
		uint16_t layer;
		if (fg_stream_classify_at(&s->engine->bands, f.hdr.stream_id, ws_bound(c), &band, &layer) == 0 &&
		    band == FG_BAND_CANONICAL && !cp_epoch_guard_role_may_report(c->role)) {
			/* Only the coordinator's reports reach the shadow audit
			 * (cp_epoch_guard.h rule 1): a policy close, as for a
			 * consumer sending frames. */
			s->st.canon_refused_role++;
			cp_info("conn %s: canonical report refused: role %s is not %s", c->peer, c->role ? c->role : "-",
				CP_ROLE_COORDINATOR);
			cp_ws_close(c, CP_WS_CLOSE_POLICY, "canonical reports need the coordinator role");
			return;
		}
		int e = cp_engine_submit_from(s->engine, &f, ws_bound(c), &from, cp_conn_cookie(c));
		if (e < 0)
			ws_refused(c, data + off, (size_t)r, FG_O_NO_SLOT, 0);
		off += (size_t)r;
	}
}

void cp_ws_on_data(struct cp_conn *c)
{
	size_t off = 0;
	while (off < c->in_len && !cp_conn_is_closing(c)) {
		struct cp_ws_event ev;
		ssize_t r = cp_ws_rx_feed(&c->ws.rx, c->in + off, c->in_len - off, &ev);
		if (r < 0) {
			cp_info("conn %s: /flow protocol error: %s", c->peer, cp_ws_reason_name((int)r));
			cp_ws_close(c, cp_ws_reason_close_code((int)r), cp_ws_reason_name((int)r));
			break;
		}
		if (r == 0) /* the codec promises progress; never spin if it does not */
			break;
		off += (size_t)r;
		switch (ev.kind) {
		case CP_WS_EV_MESSAGE:
			if (!c->ws.close_sent)
				ws_message(c, ev.data, ev.len);
			break;
		case CP_WS_EV_PING:
			if (!c->ws.close_sent && ws_put(c, CP_WS_OP_PONG, ev.data, ev.len) < 0)
				cp_conn_close(c, "cannot write pong");
			break;
		case CP_WS_EV_CLOSE:
			c->ws.close_received = true;
			/* Echo the peer's code (an empty close is echoed empty). */
			cp_ws_close(c, ev.close_code == CP_WS_CLOSE_NO_STATUS ? 0 : ev.close_code, "");
			break;
		default:
			break;
		}
	}
	if (off > c->in_len)
		off = c->in_len;
	memmove(c->in, c->in + off, c->in_len - off);
	c->in_len -= off;
	if (!cp_conn_is_closing(c))
		ws_deadline(c);
}

void cp_ws_push(struct cp_conn *c, uint16_t layer, const uint8_t *frame, size_t len)
{
	(void)layer;
	if (cp_conn_is_closing(c) || c->ws.close_sent)
		return;
	if (!cp_conn_has_room(c, len + CP_WS_SERVER_HDR_MAX)) {
		c->srv->st.slow_consumer_drops++;
		cp_info("conn %s: slow consumer: send queue over %u bytes, dropping the session", c->peer,
			c->srv->cfg->send_queue_max);
		cp_ws_close(c, CP_WS_CLOSE_POLICY, "slow consumer");
		return;
	}
	if (ws_put(c, CP_WS_OP_BINARY, frame, len) < 0) {
		cp_conn_close(c, "cannot write seed");
		return;
	}
	c->ws.msgs_out++;
	c->srv->st.ws_msgs_out++;
	c->srv->st.seeds_pushed++;
	/* Pushes are traffic: a pure subscriber is not idle while seeds flow. */
	ws_deadline(c);
	if (!c->in_process)
		cp_conn_flush_later(c);
}
