/*
 * NAME
 *	script 3 - the Lua script of one sync with Redis
 * SYNOPSIS
 *	#include "cluster/cluster_impl.h"
 *
 *	extern const char cluster_sync_script[]
 * DESCRIPTION
 *	One EVAL per sync does a member's whole exchange, atomically
 *	(doc/cluster.md, decision 100). KEYS[1] is the members' sorted set
 *	(member scored by the end of its heartbeat), KEYS[2] the hosts'
 *	hash (host to retry time, wall-clock ms), KEYS[3] the suspensions'
 *	hash (destination to its end, wall-clock ms, 0: until resumed),
 *	KEYS[4] the dead destinations' hash ("TRANSPORT:QUEUE" to "REVIVAL
 *	REASON", wall-clock ms), KEYS[5] the members' hash of the live
 *	count each was last told (its share's divisor), KEYS[6] the
 *	connection records' capped list and KEYS[7] their sequence number,
 *	then for each queue its
 *	lease sorted set ("MEMBER:SLOT" scored by expiry), its want hash
 *	(member to "WANT EXPIRY"), its message rate's and its connection
 *	rate's theoretical arrival times (GCRA). ARGV: member, lease time
 *	(ms), whether to pull the hosts, the queue count,
 *	cluster_alone_time (ms), then LIMIT WANT
 *	BUSY RCOUNT RPERIOD RWANT CCOUNT CPERIOD CWANT per queue (LIMIT 0:
 *	no leases; RCOUNT, CCOUNT 0: no such rate), then the fact count
 *	and HOST RETRY per fact, then the suspension count and DEST UNTIL
 *	per suspension (UNTIL -1: resumed), then the dead count and DEST
 *	REVIVAL REASON per dead destination (REVIVAL -1: revived; a later
 *	revival replaces an earlier one), then the close count and HOST
 *	WHEN per connection closed, then the sequence number of the last
 *	connection record the member applied (-1: none yet), then 1 when
 *	the member leaves (a clean stop, decision 136: it asks for nothing,
 *	so its leases and wants go, and it is taken out of the members and
 *	their counts at the end), else 0.
 *
 *	Connection records (decision 121): each failure published and each
 *	close goes on a list, newest first, "SEQ MEMBER KIND HOST WHEN"
 *	(KIND F: failed, WHEN its retry time; C: closed, WHEN its time),
 *	kept to 256 entries; each sync returns the other members' records
 *	newer than the member's, so a failure reaches every member at its
 *	next sync, not at its next pull.
 *
 *	Time is Redis's own (TIME), so members' clocks need not agree for
 *	leases. Per queue: expired leases and wants go; this member's
 *	want is stored; its target is its fair part of the limit among the
 *	members that want (the limit divided by their number, the
 *	remainder to the first by name), or more when the others want
 *	less; it keeps at least the leases its deliveries in flight use,
 *	gives back the rest above the target, renews what it keeps, and
 *	takes free slots up to the target while the set holds fewer than
 *	the limit. The sum of leases never exceeds the limit. Each rate
 *	grants up to its WANT starts by GCRA (rate.c's arithmetic, on the
 *	stored arrival time), one key per queue and kind.
 *
 *	A member whose heartbeat ended less than cluster_alone_time ago,
 *	or ends within a third of the lease time (its renewal, due every
 *	third, is late), is missing, not gone (decision 120): it still
 *	counts among the
 *	live members, its leases stay past their expiry, and every limit
 *	holds its share for it (the limit divided by the count it was last
 *	told, at least 1, or the leases it kept when more): the others'
 *	fair parts divide what is left (the pool), and the set takes no
 *	slot that would leave less than that share free. Once its
 *	heartbeat is older by a third of the lease time more (the member
 *	itself keeps no more than 1 from cluster_alone_time on, and has
 *	that long to close its idle connections), it and its leases go.
 *
 *	It returns { live members, { leases held per queue }, { HOST,
 *	RETRY, ... }, { starts per queue }, ms until a rate fits one more
 *	or -1, { DEST, UNTIL, ... } or 0, { target per queue },
 *	{ connections per queue }, { DEST, "REVIVAL REASON", ... } or 0,
 *	{ SEQ, BEHIND, KIND, HOST, WHEN, ... } }, BEHIND 1 when records
 *	newer than the member's were lost to the cap (or the count started
 *	again): it pulls the hosts then
 *	(the hosts, the suspensions and the dead destinations only when
 *	pulled). A queue's target may be below the leases it holds (BUSY
 *	kept them): it runs no more than the target and closes the idle
 *	connections above it, and the next sync gives the rest back
 *	(doc/cluster.md).
 */

#include "cluster/cluster_impl.h"

const char cluster_sync_script[] =
    "local member, ttl = ARGV[1], tonumber(ARGV[2])\n"
    "local pull, nq = ARGV[3], tonumber(ARGV[4])\n"
    "local alone = tonumber(ARGV[5])\n"
    "local gone = alone + math.floor(ttl / 3)\n"
    "local t = redis.call('TIME')\n"
    "local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)\n"
    "for _, m in ipairs(redis.call('ZRANGEBYSCORE', KEYS[1], '-inf',\n"
    "    now - gone)) do redis.call('HDEL', KEYS[5], m) end\n"
    "redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - gone)\n"
    "redis.call('ZADD', KEYS[1], now + ttl, member)\n"
    "redis.call('PEXPIRE', KEYS[1], ttl * 2 + alone)\n"
    "local live = redis.call('ZCARD', KEYS[1])\n"
    "redis.call('HSET', KEYS[5], member, live)\n"
    "redis.call('PEXPIRE', KEYS[5], ttl * 2 + alone)\n"
    "local missing, anymissing = {}, false\n"
    "for _, m in ipairs(redis.call('ZRANGEBYSCORE', KEYS[1], '-inf',\n"
    "    now + math.floor(ttl / 3))) do\n"
    "  missing[m] = tonumber(redis.call('HGET', KEYS[5], m) or live)\n"
    "  anymissing = true\n"
    "end\n"
    "local grants, a, prefix = {}, 6, member .. ':'\n"
    "local tokens, minwait, targets, ctokens = {}, -1, {}, {}\n"
    "local function gcra(R, rcount, rperiod, rwant)\n"
    "  if rcount <= 0 or rwant <= 0 then return 0 end\n"
    "  local iv = math.max(1, math.floor(rperiod / rcount))\n"
    "  local t = math.max(tonumber(redis.call('GET', R) or '0'), now)\n"
    "  local fit = math.floor((now + rperiod - t) / iv)\n"
    "  local n = math.max(0, math.min(rwant, fit))\n"
    "  if n > 0 then\n"
    "    redis.call('SET', R, t + n * iv, 'PX', t + n * iv - now + 1000)\n"
    "  end\n"
    "  if n < rwant then\n"
    "    local w = math.max(0, t + n * iv + iv - rperiod - now)\n"
    "    if minwait < 0 or w < minwait then minwait = w end\n"
    "  end\n"
    "  return n\n"
    "end\n"
    "for q = 1, nq do\n"
    "  local L, W = KEYS[4 * q + 4], KEYS[4 * q + 5]\n"
    "  local limit, want = tonumber(ARGV[a]), tonumber(ARGV[a + 1])\n"
    "  local busy = tonumber(ARGV[a + 2])\n"
    "  tokens[q] = gcra(KEYS[4 * q + 6], tonumber(ARGV[a + 3]),\n"
    "    tonumber(ARGV[a + 4]), tonumber(ARGV[a + 5]))\n"
    "  ctokens[q] = gcra(KEYS[4 * q + 7], tonumber(ARGV[a + 6]),\n"
    "    tonumber(ARGV[a + 7]), tonumber(ARGV[a + 8]))\n"
    "  a = a + 9\n"
    "  grants[q], targets[q] = 0, 0\n"
    "  if limit > 0 then\n"
    "  local pool, pad = limit, 0\n"
    "  if not anymissing then redis.call('ZREMRANGEBYSCORE', L, '-inf', now)\n"
    "  else\n"
    "    local kept, z = {}, redis.call('ZRANGE', L, 0, -1, 'WITHSCORES')\n"
    "    for i = 1, #z, 2 do\n"
    "      local who = string.match(z[i], '^(.*):%d+$')\n"
    "      if who and missing[who] then kept[who] = (kept[who] or 0) + 1\n"
    "      elseif tonumber(z[i + 1]) <= now then redis.call('ZREM', L, z[i]) "
    "end\n"
    "    end\n"
    "    for who, seen in pairs(missing) do\n"
    "      local share = math.max(1, math.floor(limit / math.max(1, seen)))\n"
    "      local k = kept[who] or 0\n"
    "      pool = pool - math.max(k, share)\n"
    "      if share > k then pad = pad + share - k end\n"
    "    end\n"
    "    pool = math.max(0, pool)\n"
    "  end\n"
    "  if want > 0 then\n"
    "    redis.call('HSET', W, member, want .. ' ' .. (now + ttl))\n"
    "    redis.call('PEXPIRE', W, ttl * 2)\n"
    "  else redis.call('HDEL', W, member) end\n"
    "  local kv, names, others = redis.call('HGETALL', W), {}, 0\n"
    "  for i = 1, #kv, 2 do\n"
    "    local w, e = string.match(kv[i + 1], '^(%d+) (%d+)$')\n"
    "    if not w or tonumber(e) <= now then redis.call('HDEL', W, kv[i])\n"
    "    else\n"
    "      names[#names + 1] = kv[i]\n"
    "      if kv[i] ~= member then others = others + tonumber(w) end\n"
    "    end\n"
    "  end\n"
    "  table.sort(names)\n"
    "  local target = 0\n"
    "  if want > 0 then\n"
    "    local rank = 0\n"
    "    for i, m in ipairs(names) do if m == member then rank = i - 1 end "
    "end\n"
    "    local fair = math.floor(pool / #names)\n"
    "    if rank < pool % #names then fair = fair + 1 end\n"
    "    target = math.min(want, math.max(fair, pool - others))\n"
    "  end\n"
    "  local mine = {}\n"
    "  for _, m in ipairs(redis.call('ZRANGE', L, 0, -1)) do\n"
    "    if string.sub(m, 1, #prefix) == prefix then\n"
    "      mine[#mine + 1] = tonumber(string.sub(m, #prefix + 1))\n"
    "    end\n"
    "  end\n"
    "  table.sort(mine)\n"
    "  local keep = math.max(target, math.min(busy, #mine))\n"
    "  local held, count = {}, 0\n"
    "  for i, s in ipairs(mine) do\n"
    "    if i <= keep then\n"
    "      redis.call('ZADD', L, now + ttl, prefix .. s)\n"
    "      held[s] = true\n"
    "      count = count + 1\n"
    "    else redis.call('ZREM', L, prefix .. s) end\n"
    "  end\n"
    "  local s = 0\n"
    "  while count < target and redis.call('ZCARD', L) + pad < limit do\n"
    "    while held[s] do s = s + 1 end\n"
    "    redis.call('ZADD', L, now + ttl, prefix .. s)\n"
    "    held[s] = true\n"
    "    count = count + 1\n"
    "  end\n"
    "  if count > 0 then redis.call('PEXPIRE', L, ttl * 2 + alone) end\n"
    "  grants[q], targets[q] = count, target\n"
    "  end\n"
    "end\n"
    "local records = 0\n"
    "local function record(kind, host, wall)\n"
    "  local s = redis.call('INCR', KEYS[7])\n"
    "  redis.call('LPUSH', KEYS[6], s .. ' ' .. member .. ' ' .. kind .. "
    "' ' .. host .. ' ' .. wall)\n"
    "  records = records + 1\n"
    "end\n"
    "local nf = tonumber(ARGV[a])\n"
    "a = a + 1\n"
    "for f = 1, nf do\n"
    "  local host, retry = ARGV[a], tonumber(ARGV[a + 1])\n"
    "  a = a + 2\n"
    "  if retry == 0 then redis.call('HDEL', KEYS[2], host)\n"
    "  else\n"
    "    record('F', host, retry)\n"
    "    local old = tonumber(redis.call('HGET', KEYS[2], host) or '0')\n"
    "    if retry > old then redis.call('HSET', KEYS[2], host, retry) end\n"
    "  end\n"
    "end\n"
    "local ns = tonumber(ARGV[a])\n"
    "a = a + 1\n"
    "for i = 1, ns do\n"
    "  local dest, untl = ARGV[a], tonumber(ARGV[a + 1])\n"
    "  a = a + 2\n"
    "  if untl < 0 then redis.call('HDEL', KEYS[3], dest)\n"
    "  else redis.call('HSET', KEYS[3], dest, untl) end\n"
    "end\n"
    "local nd = tonumber(ARGV[a])\n"
    "a = a + 1\n"
    "for i = 1, nd do\n"
    "  local dest, untl, why = ARGV[a], tonumber(ARGV[a + 1]), ARGV[a + 2]\n"
    "  a = a + 3\n"
    "  if untl < 0 then redis.call('HDEL', KEYS[4], dest)\n"
    "  else\n"
    "    local old = redis.call('HGET', KEYS[4], dest)\n"
    "    old = old and tonumber(string.match(old, '^(%d+)')) or 0\n"
    "    if untl > old then redis.call('HSET', KEYS[4], dest, untl .. ' ' .. "
    "why) end\n"
    "  end\n"
    "end\n"
    "if nd > 0 then redis.call('PEXPIRE', KEYS[4], 86400000) end\n"
    "local nc = tonumber(ARGV[a])\n"
    "a = a + 1\n"
    "for i = 1, nc do\n"
    "  record('C', ARGV[a], tonumber(ARGV[a + 1]))\n"
    "  a = a + 2\n"
    "end\n"
    "if records > 0 then\n"
    "  redis.call('LTRIM', KEYS[6], 0, 255)\n"
    "  redis.call('PEXPIRE', KEYS[6], 86400000)\n"
    "  redis.call('PEXPIRE', KEYS[7], 86400000)\n"
    "end\n"
    "local seen = tonumber(ARGV[a])\n"
    "local cur = tonumber(redis.call('GET', KEYS[7]) or '0')\n"
    "local recent, oldest = {cur, 0}, cur + 1\n"
    "if seen > cur then recent[2] = 1\n"
    "elseif seen >= 0 and seen < cur then\n"
    "  for _, e in ipairs(redis.call('LRANGE', KEYS[6], 0, -1)) do\n"
    "    local s, who, kind, host, wall =\n"
    "      string.match(e, '^(%d+) (%S+) ([FC]) (%S+) (%d+)$')\n"
    "    if not s or tonumber(s) <= seen then break end\n"
    "    oldest = tonumber(s)\n"
    "    if who ~= member then\n"
    "      recent[#recent + 1] = kind\n"
    "      recent[#recent + 1] = host\n"
    "      recent[#recent + 1] = wall\n"
    "    end\n"
    "  end\n"
    "  if oldest > seen + 1 then recent[2] = 1 end\n"
    "end\n"
    "local facts, susp, dead = {}, 0, 0\n"
    "if pull == '1' then\n"
    "  local kv = redis.call('HGETALL', KEYS[2])\n"
    "  for i = 1, #kv, 2 do\n"
    "    if tonumber(kv[i + 1]) <= now then redis.call('HDEL', KEYS[2], "
    "kv[i])\n"
    "    else facts[#facts + 1] = kv[i]; facts[#facts + 1] = kv[i + 1] end\n"
    "  end\n"
    "end\n"
    "if pull == '1' then\n"
    "  susp = {}\n"
    "  local kv = redis.call('HGETALL', KEYS[3])\n"
    "  for i = 1, #kv, 2 do\n"
    "    local u = tonumber(kv[i + 1])\n"
    "    if u > 0 and u <= now then redis.call('HDEL', KEYS[3], kv[i])\n"
    "    else susp[#susp + 1] = kv[i]; susp[#susp + 1] = kv[i + 1] end\n"
    "  end\n"
    "end\n"
    "if pull == '1' then\n"
    "  dead = {}\n"
    "  local kv = redis.call('HGETALL', KEYS[4])\n"
    "  for i = 1, #kv, 2 do\n"
    "    local u = tonumber(string.match(kv[i + 1], '^(%d+)') or '0')\n"
    "    if u <= now then redis.call('HDEL', KEYS[4], kv[i])\n"
    "    else dead[#dead + 1] = kv[i]; dead[#dead + 1] = kv[i + 1] end\n"
    "  end\n"
    "end\n"
    "if ARGV[#ARGV] == '1' then\n"
    "  redis.call('ZREM', KEYS[1], member)\n"
    "  redis.call('HDEL', KEYS[5], member)\n"
    "end\n"
    "return { live, grants, facts, tokens, minwait, susp, targets, "
    "ctokens, dead, recent }\n";
