-- fanogate.lua - Wireshark dissector for aeon-flow as fanogate speaks it.
--
-- Decodes:
--   * UDP fragmented profile (default port 4242): 4-byte fragment header,
--     then a chunk of one aeon-flow frame; fragment 0 carries the 10-byte
--     header (and, on the seed/canonical bands, the 8-byte prefix).
--   * UDP raw profile (port set in Preferences, off by default): one whole
--     frame per datagram.
--   * WebSocket binary payloads with subprotocol "aeon-flow" (and any
--     WebSocket payload when "Try WebSocket payloads" is on): 1..N frames.
-- Names the fanogate bands (seed, canonical, resolved, status, ACK), the
-- Fano line (index and oriented triple), the orientation, token and layer.
--
-- Use: tshark -X lua_script:tools/wireshark/fanogate.lua -r capture.pcap -V
-- Bands follow the default configuration (base 0xAF60/0xAF80/0xAFA0, 32
-- layers); change them in Preferences if the appliance is configured
-- otherwise.

local p = Proto("aeonflow", "Aeon Flow (fanogate)")

local LINES = { "(1,2,3)", "(1,4,5)", "(1,7,6)", "(2,4,6)", "(2,5,7)", "(3,4,7)", "(3,6,5)" }
local OUTCOMES = { [0] = "accepted", "resolved", "partial", "duplicate", "duplicate_pending",
	"conflict", "late", "expired", "poisoned", "no_slot", "shape_mismatch", "unexpected_line",
	"stale", "bad_range", "malformed", "line_disabled" }
local LSTATES = { [0] = "disabled", "shadow", "active", "degraded" }

local f = {
	frame_id = ProtoField.uint16("aeonflow.frag.frame_id", "Frame id", base.DEC),
	frag_index = ProtoField.uint8("aeonflow.frag.index", "Fragment index", base.DEC),
	frag_total = ProtoField.uint8("aeonflow.frag.total", "Fragment total", base.DEC),
	stream = ProtoField.uint16("aeonflow.stream", "Stream id", base.HEX),
	band = ProtoField.string("aeonflow.band", "Band"),
	layer = ProtoField.uint16("aeonflow.layer", "Layer", base.DEC),
	seq = ProtoField.uint32("aeonflow.seq", "Sequence", base.DEC),
	token = ProtoField.uint32("aeonflow.token", "Token seq", base.DEC),
	flags = ProtoField.uint8("aeonflow.flags", "Flags", base.HEX),
	length = ProtoField.uint32("aeonflow.length", "Payload length", base.DEC),
	line = ProtoField.uint8("aeonflow.line", "Fano line", base.DEC),
	triple = ProtoField.string("aeonflow.triple", "Line triple"),
	orient = ProtoField.string("aeonflow.orientation", "Orientation"),
	start_pos = ProtoField.uint32("aeonflow.start_pos", "start_pos", base.DEC),
	seq_len = ProtoField.uint32("aeonflow.seq_len", "seq_len", base.DEC),
	nfloats = ProtoField.uint32("aeonflow.floats", "f32 values", base.DEC),
	kind = ProtoField.string("aeonflow.canonical_kind", "Canonical kind"),
	digest = ProtoField.uint64("aeonflow.digest", "XXH3-64 digest", base.HEX),
	ack_stream = ProtoField.uint16("aeonflow.ack.stream", "ACK stream", base.HEX),
	ack_base = ProtoField.uint32("aeonflow.ack.base", "ACK base_seq", base.DEC),
	ack_hi = ProtoField.uint32("aeonflow.ack.bitmap_hi", "ACK bitmap_hi", base.HEX),
	ack_lo = ProtoField.uint32("aeonflow.ack.bitmap_lo", "ACK bitmap_lo", base.HEX),
	st_outcome = ProtoField.string("aeonflow.status.outcome", "Outcome"),
	st_facts = ProtoField.uint8("aeonflow.status.facts", "Facts", base.HEX),
	st_shadow = ProtoField.bool("aeonflow.status.shadow_mode", "shadow_mode"),
	st_resolved = ProtoField.bool("aeonflow.status.fully_resolved", "fully_resolved"),
	st_awaiting = ProtoField.bool("aeonflow.status.awaiting_resolution", "awaiting_resolution"),
	st_audit = ProtoField.string("aeonflow.status.audit", "audit (recording, failed, off)"),
	st_lstate = ProtoField.string("aeonflow.status.line_state", "Line state"),
	st_epoch = ProtoField.uint32("aeonflow.status.epoch", "Model epoch", base.DEC),
	st_fp = ProtoField.uint64("aeonflow.status.fingerprint", "Fingerprint", base.HEX),
	st_bitset = ProtoField.uint8("aeonflow.status.bitset", "bitset (lines satisfied; 0x7f = fully resolved)", base.HEX),
	st_expected = ProtoField.uint8("aeonflow.status.expected", "expected", base.HEX),
	st_landed = ProtoField.uint8("aeonflow.status.landed", "landed", base.HEX),
	chunk = ProtoField.bytes("aeonflow.chunk", "Continuation chunk"),
}
p.fields = f

p.prefs.udp_port = Pref.uint("Fragmented UDP port", 4242, "UDP port of the fragmented profile")
p.prefs.raw_port = Pref.uint("Raw UDP port", 0, "UDP port of the raw profile (0 = off)")
p.prefs.seed_base = Pref.uint("Seed band base", 0xAF60, "")
p.prefs.canon_base = Pref.uint("Canonical band base", 0xAF80, "")
p.prefs.resolved_base = Pref.uint("Resolved band base", 0xAFA0, "")
p.prefs.layer_bits = Pref.uint("Layer bits", 5, "")
p.prefs.orientation = Pref.enum("Orientation reading", 0, "[wire] orientation: bit (0 = +, 1 = -) or signed (0x1 = +, 0xF = -)",
	{ { 1, "bit", 0 }, { 2, "signed", 1 } }, false)
p.prefs.ws_heur = Pref.bool("Try WebSocket payloads", true, "Decode every WebSocket binary payload as aeon-flow")

local function band_of(stream)
	local n = 2 ^ p.prefs.layer_bits
	if stream == 0xFFFF then return "ack", nil end
	if stream == 0xFFFE then return "status", nil end
	if stream >= p.prefs.seed_base and stream < p.prefs.seed_base + n then return "seed", stream - p.prefs.seed_base end
	if stream >= p.prefs.canon_base and stream < p.prefs.canon_base + n then return "canonical", stream - p.prefs.canon_base end
	if stream >= p.prefs.resolved_base and stream < p.prefs.resolved_base + n then return "resolved", stream - p.prefs.resolved_base end
	return "unknown", nil
end

-- Dissect one frame starting at off; returns bytes used (0 if not even a header).
local function frame(tvb, off, tree, pinfo)
	local avail = tvb:len() - off
	if avail < 10 then return 0 end
	local stream = tvb(off, 2):uint()
	local seq = tvb(off + 2, 4):uint()
	local flags = tvb(off + 6, 1):uint()
	local len = tvb(off + 7, 3):uint()
	local have = math.min(len, avail - 10)
	local band, layer = band_of(stream)
	local t = tree:add(p, tvb(off, 10 + have), "Aeon-flow frame: " .. band)
	t:add(f.stream, tvb(off, 2))
	t:add(f.band, band)
	if layer then t:add(f.layer, layer) end
	t:add(f.seq, tvb(off + 2, 4))
	t:add(f.flags, tvb(off + 6, 1))
	t:add(f.length, tvb(off + 7, 3))
	local info = band
	local pl = off + 10
	if band == "seed" or band == "canonical" or band == "resolved" then
		t:add(f.token, tvb(off + 2, 4))
		info = string.format("%s L%d tok %d", band, layer, seq)
		if band == "seed" then
			local line = bit.rshift(flags, 4)
			local o = bit.band(flags, 0x0F)
			t:add(f.line, line)
			t:add(f.triple, LINES[line + 1] or "invalid")
			if p.prefs.orientation == 1 then
				t:add(f.orient, o == 1 and "+" or (o == 15 and "-" or "invalid"))
			else
				t:add(f.orient, o == 0 and "+" or (o == 1 and "-" or "invalid"))
			end
			info = info .. string.format(" line %d %s %s", line, LINES[line + 1] or "?", o == 0 and "+" or "-")
		end
		if have >= 8 then
			t:add_le(f.start_pos, tvb(pl, 4))
			t:add_le(f.seq_len, tvb(pl + 4, 4))
			if band == "canonical" and bit.band(flags, 0x0F) == 1 then
				t:add(f.kind, "digest")
				if have >= 16 then t:add_le(f.digest, tvb(pl + 8, 8)) end
			else
				if band == "canonical" then t:add(f.kind, "full") end
				t:add(f.nfloats, math.floor((len - 8) / 4))
			end
		end
	elseif band == "ack" then
		local n = math.floor(have / 14)
		for i = 0, n - 1 do
			local e = pl + i * 14
			local et = t:add(p, tvb(e, 14), "ACK entry " .. i)
			et:add(f.ack_stream, tvb(e, 2))
			et:add(f.ack_base, tvb(e + 2, 4))
			et:add(f.ack_hi, tvb(e + 6, 4))
			et:add(f.ack_lo, tvb(e + 10, 4))
		end
		info = string.format("ACK %d entries", n)
	elseif band == "status" and have >= 32 then
		-- version 2 (include/fg/wire.h): bitset = lines satisfied, landed at 28
		t:add(f.token, tvb(off + 2, 4))
		local oc = tvb(pl + 1, 1):uint()
		local line = tvb(pl + 2, 1):uint()
		local facts = tvb(pl + 8, 1):uint()
		t:add(f.st_outcome, OUTCOMES[oc] or tostring(oc))
		if line < 7 then
			t:add(f.line, line)
			t:add(f.triple, LINES[line + 1])
		end
		t:add(f.layer, tvb(pl + 4, 2):le_uint())
		t:add(f.st_facts, tvb(pl + 8, 1))
		t:add(f.st_shadow, bit.band(facts, 2) ~= 0)
		t:add(f.st_resolved, bit.band(facts, 4) ~= 0)
		t:add(f.st_awaiting, bit.band(facts, 8) ~= 0)
		t:add(f.st_audit, bit.band(facts, 0x20) ~= 0 and "failed" or bit.band(facts, 0x40) ~= 0 and "off" or "recording")
		t:add(f.st_lstate, LSTATES[tvb(pl + 9, 1):uint()] or "?")
		t:add_le(f.st_epoch, tvb(pl + 16, 4))
		t:add_le(f.st_fp, tvb(pl + 20, 8))
		t:add(f.st_bitset, tvb(pl + 6, 1))
		t:add(f.st_expected, tvb(pl + 7, 1))
		t:add(f.st_landed, tvb(pl + 28, 1))
		info = string.format("status tok %d %s", seq, OUTCOMES[oc] or "?")
	end
	pinfo.cols.info:append(" " .. info)
	return 10 + have
end

local function frames(tvb, off, tree, pinfo)
	while off < tvb:len() do
		local used = frame(tvb, off, tree, pinfo)
		if used == 0 then break end
		off = off + used
	end
end

local function dissect_frag(tvb, pinfo, tree)
	if tvb:len() < 4 then return 0 end
	pinfo.cols.protocol = "AEONFLOW"
	pinfo.cols.info = ""
	local t = tree:add(p, tvb(0, 4), "Fragment header")
	t:add(f.frame_id, tvb(0, 2))
	t:add(f.frag_index, tvb(2, 1))
	t:add(f.frag_total, tvb(3, 1))
	local idx, tot = tvb(2, 1):uint(), tvb(3, 1):uint()
	pinfo.cols.info:append(string.format("frag %d/%d id %d", idx, tot, tvb(0, 2):uint()))
	if idx == 0 then
		frame(tvb, 4, tree, pinfo)
	elseif tvb:len() > 4 then
		tree:add(f.chunk, tvb(4))
	end
	return tvb:len()
end

local function dissect_raw(tvb, pinfo, tree)
	pinfo.cols.protocol = "AEONFLOW"
	pinfo.cols.info = "raw"
	frames(tvb, 0, tree, pinfo)
	return tvb:len()
end

p.dissector = dissect_frag

local raw = Proto("aeonflow_raw", "Aeon Flow raw UDP (fanogate)")
raw.dissector = dissect_raw
local ws = Proto("aeonflow_ws", "Aeon Flow over WebSocket (fanogate)")
ws.dissector = function(tvb, pinfo, tree)
	pinfo.cols.protocol = "AEONFLOW/WS"
	pinfo.cols.info = ""
	frames(tvb, 0, tree, pinfo)
	return tvb:len()
end

local registered = {}
function p.init()
	local udp = DissectorTable.get("udp.port")
	for port, _ in pairs(registered) do udp:remove(port, p); udp:remove(port, raw) end
	registered = {}
	if p.prefs.udp_port ~= 0 then udp:add(p.prefs.udp_port, p); registered[p.prefs.udp_port] = true end
	if p.prefs.raw_port ~= 0 then udp:add(p.prefs.raw_port, raw); registered[p.prefs.raw_port] = true end
end

local wsp = DissectorTable.get("ws.protocol")
if wsp then wsp:add("aeon-flow", ws) end
ws:register_heuristic("ws", function(tvb, pinfo, tree)
	if not p.prefs.ws_heur or tvb:len() < 10 then return false end
	local band = band_of(tvb(0, 2):uint())
	if band == "unknown" then return false end
	ws.dissector(tvb, pinfo, tree)
	return true
end)
