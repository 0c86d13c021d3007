-- wrk script of the API bench: each request is drawn at random from REQUESTS_FILE, one request a
-- line as "<path>\t<If-None-Match or empty>", sent with "Authorization: Bearer <TOKEN>". At the
-- end it prints one JSON line with the counts and latency percentiles (microseconds).
local prepared = {}

function init(args)
  local token = os.getenv("TOKEN")
  for line in io.lines(os.getenv("REQUESTS_FILE")) do
    local path, etag = line:match("^([^\t]+)\t?(.*)$")
    local headers = { ["Authorization"] = "Bearer " .. token }
    if etag ~= "" then headers["If-None-Match"] = etag end
    prepared[#prepared + 1] = wrk.format("GET", path, headers)
  end
  -- Threads start in the same second: seed each from its own table address too.
  math.randomseed(os.time() + tonumber(tostring(prepared):match("0x(%x+)") or "0", 16) % 100000)
end

function request()
  return prepared[math.random(#prepared)]
end

function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    '{"requests":%d,"durationUs":%d,"p50Us":%d,"p99Us":%d,"maxUs":%d,' ..
      '"connectErrors":%d,"readErrors":%d,"writeErrors":%d,"statusErrors":%d,"timeouts":%d}\n',
    summary.requests, summary.duration, latency:percentile(50), latency:percentile(99),
    latency.max, e.connect, e.read, e.write, e.status, e.timeout))
end
