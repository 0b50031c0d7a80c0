"""Lua scripts that move a circuit breaker kept in a Redis hash, atomically.

The hash holds ``state``, ``failures``, ``opened_at``, ``probe`` (the trial call's token) and
``probe_at``. Times come from the caller's clock (``ARGV[1]``); numbers go back as strings because
Redis truncates Lua numbers to integers. The transitions mirror ``toolrig.state._memory``.
"""

from __future__ import annotations

__all__ = ["BREAKER_ACQUIRE", "BREAKER_RECORD"]

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
