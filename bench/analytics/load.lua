-- wrk request generator for bench/analytics/run.mjs: each request comes from
-- another client IP (X-Forwarded-For; the proxy trusts 127.0.0.1) and asks for
-- one of 1,000 paths under the prefix given after `--`: /t/ (small text), /p/
-- (HTML page) or /m/, a site mix: one HTML page (/p/) in ten requests, the
-- other nine small assets (/t/).
-- Client IPs: a pool of 100,000 public IPv4 addresses spread over RIR ranges
-- of every region (so countries vary), taken in turn from a random start.
-- Paths: Zipf-distributed (s = 1, as page popularity roughly is): the top 32
-- paths get ~54 % of the requests, the rest is a long tail.
local prefix = "/t/"
local n = 0
local POOL = 100000
-- First octets allocated by ARIN, RIPE, APNIC, LACNIC and AFRINIC.
local OCTETS = { 3, 8, 12, 23, 24, 31, 37, 41, 46, 62, 77, 80, 81, 82, 85, 88, 90, 91, 94, 95, 101, 103, 110,
  111, 115, 117, 118, 119, 121, 122, 123, 125, 154, 177, 178, 179, 181, 186, 187, 189, 190, 196, 197, 200,
  201, 202, 210, 211, 212, 213, 217 }
local PATHS = 1000
local cdf = {}

function init(args)
  if args[1] ~= nil then prefix = args[1] end
  local total = 0
  for k = 1, PATHS do total = total + 1 / k end
  local acc = 0
  for k = 1, PATHS do
    acc = acc + (1 / k) / total
    cdf[k] = acc
  end
  math.randomseed(os.time())
  n = math.random(0, POOL - 1)
end

local function zipf()
  local u = math.random()
  local lo, hi = 1, PATHS
  while lo < hi do
    local mid = math.floor((lo + hi) / 2)
    if cdf[mid] < u then lo = mid + 1 else hi = mid end
  end
  return lo - 1
end

function request()
  n = n + 1
  local v = n % POOL
  local ip = OCTETS[(v % #OCTETS) + 1] .. "." .. (math.floor(v / 256) % 256) .. "." .. (v % 256) .. "." .. (1 + v % 250)
  local p = prefix
  if p == "/m/" then
    if n % 10 == 0 then p = "/p/" else p = "/t/" end
  end
  return wrk.format("GET", p .. zipf(), { ["X-Forwarded-For"] = ip })
end
