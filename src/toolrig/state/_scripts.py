"""Lua scripts: a circuit breaker kept in a Redis hash, and one call's admission checks, each atomic.

The breaker's hash holds ``state``, ``failures``, ``opened_at``, ``probe`` (the trial call's token) and
``probe_at``. Times come from the caller's clock (``ARGV[1]``); numbers go back as strings because
Redis truncates Lua numbers to integers. The transitions mirror ``toolrig.state._memory``.
"""

from __future__ import annotations

__all__ = ["ADMIT", "BREAKER_ACQUIRE", "BREAKER_RECORD"]

BREAKER_ACQUIRE = """
-- KEYS[1]: circuit hash. ARGV: now, recovery_time, lease, token, ttl, mode ('acquire' | 'peek')
local now = tonumber(ARGV[1])
local f = redis.call('HMGET', KEYS[1], 'state', 'failures', 'opened_at', 'probe', 'probe_at')
local state = f[1] or 'closed'
local failures = tonumber(f[2]) or 0
if state == 'closed' then
  return {'closed', 1, '0', failures, ''}
end
if state == 'open' then
  local wait = (tonumber(f[3]) or 0) + tonumber(ARGV[2]) - now
  if wait > 0 then return {'open', 0, tostring(wait), failures, ''} end
elseif f[4] and f[4] ~= '' then
  local wait = (tonumber(f[5]) or 0) + tonumber(ARGV[3]) - now
  if wait > 0 then return {'half_open', 0, tostring(wait), failures, ''} end
end
if ARGV[6] == 'peek' then
  return {'half_open', 1, '0', failures, ''}
end
redis.call('HSET', KEYS[1], 'state', 'half_open', 'probe', ARGV[4], 'probe_at', ARGV[1])
redis.call('EXPIRE', KEYS[1], ARGV[5])
return {'half_open', 1, '0', failures, ARGV[4]}
"""

BREAKER_RECORD = """
-- KEYS[1]: circuit hash. ARGV: now, failure_threshold, result ('success'|'failure'|'neutral'), probe, ttl
local f = redis.call('HMGET', KEYS[1], 'state', 'failures', 'probe')
local state = f[1] or 'closed'
local failures = tonumber(f[2]) or 0
local is_probe = ARGV[4] ~= '' and state == 'half_open' and f[3] == ARGV[4]
if ARGV[3] == 'neutral' then
  if is_probe then redis.call('HDEL', KEYS[1], 'probe', 'probe_at') end
  return state
end
if state == 'closed' then
  if ARGV[3] == 'success' then
    if f[1] then redis.call('DEL', KEYS[1]) end
    return 'closed'
  end
  failures = failures + 1
  if failures >= tonumber(ARGV[2]) then
    redis.call('HSET', KEYS[1], 'state', 'open', 'failures', failures, 'opened_at', ARGV[1])
    state = 'open'
  else
    redis.call('HSET', KEYS[1], 'state', 'closed', 'failures', failures)
  end
  redis.call('EXPIRE', KEYS[1], ARGV[5])
  return state
end
if not is_probe then
  return state
end
if ARGV[3] == 'success' then
  redis.call('DEL', KEYS[1])
  return 'closed'
end
redis.call('HSET', KEYS[1], 'state', 'open', 'failures', failures + 1, 'opened_at', ARGV[1])
redis.call('HDEL', KEYS[1], 'probe', 'probe_at')
redis.call('EXPIRE', KEYS[1], ARGV[5])
return 'open'
"""

ADMIT = """
-- One call's checks in order, stopping after the first that refuses (toolrig.state._admission).
-- ARGV[1]: wall time for rate limits. Then per step a kind and its arguments; KEYS in the same order.
--   W now cutoff member ttl stop_at        (1 key: sorted set)  -> count
--   L n amount1 expiry1 ... amountN expiryN (n keys: lists)      -> {} allowed | {i, oldest, ...} the full ones
--   B now recovery_time lease               (1 key: hash)        -> {state, allowed, wait, failures}
-- Rate-limit lists keep the limits library's moving-window layout (newest first, trimmed to the amount).
local wall = tonumber(ARGV[1])
local a, k, out = 2, 1, {}
while a <= #ARGV do
  local kind = ARGV[a]
  if kind == 'W' then
    local key = KEYS[k]
    redis.call('ZREMRANGEBYSCORE', key, '-inf', ARGV[a + 2])
    redis.call('ZADD', key, ARGV[a + 1], ARGV[a + 3])
    local count = redis.call('ZCARD', key)
    redis.call('EXPIRE', key, ARGV[a + 4])
    out[#out + 1] = count
    local stop = tonumber(ARGV[a + 5])
    if stop > 0 and count >= stop then return out end
    k, a = k + 1, a + 6
  elseif kind == 'L' then
    local n = tonumber(ARGV[a + 1])
    local full = {}
    for i = 0, n - 1 do
      local amount, expiry = tonumber(ARGV[a + 2 + 2 * i]), tonumber(ARGV[a + 3 + 2 * i])
      local entry = redis.call('LINDEX', KEYS[k + i], amount - 1)
      if entry and tonumber(entry) >= wall - expiry then
        full[#full + 1] = tostring(i)
        full[#full + 1] = entry
      end
    end
    out[#out + 1] = full
    if #full > 0 then return out end
    for i = 0, n - 1 do
      redis.call('LPUSH', KEYS[k + i], ARGV[1])
      redis.call('LTRIM', KEYS[k + i], 0, tonumber(ARGV[a + 2 + 2 * i]) - 1)
      redis.call('EXPIRE', KEYS[k + i], ARGV[a + 3 + 2 * i])
    end
    k, a = k + n, a + 2 + 2 * n
  elseif kind == 'B' then
    local now = tonumber(ARGV[a + 1])
    local f = redis.call('HMGET', KEYS[k], 'state', 'failures', 'opened_at', 'probe', 'probe_at')
    local state, failures, allowed, wait = f[1] or 'closed', tonumber(f[2]) or 0, 1, 0
    if state == 'open' then
      wait = (tonumber(f[3]) or 0) + tonumber(ARGV[a + 2]) - now
      if wait > 0 then allowed = 0 else state, wait = 'half_open', 0 end
    elseif state == 'half_open' and f[4] and f[4] ~= '' then
      wait = (tonumber(f[5]) or 0) + tonumber(ARGV[a + 3]) - now
      if wait > 0 then allowed = 0 else wait = 0 end
    end
    out[#out + 1] = {state, allowed, tostring(wait), failures}
    if allowed == 0 then return out end
    k, a = k + 1, a + 4
  else
    return redis.error_reply('unknown admission step ' .. tostring(kind))
  end
end
return out
"""
