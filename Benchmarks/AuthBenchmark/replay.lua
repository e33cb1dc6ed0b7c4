-- wrk script for the auth benchmark: sends every request body of a file exactly once (thread k of
-- n takes lines k, k+n, …), each from a client address of its own (forwarded by the trusted
-- gateway, as nginx would), then stops. Optionally records the refreshToken of each 200 reply, and
-- sends a bearer credential (a backend key) with every request.
--
-- wrk -s replay.lua URL -- BODIES THREADS [CAPTURE] [BEARER]   (CAPTURE may be empty)
--
-- wrk's own Requests/sec divides by the whole -d duration even when every thread stopped early,
-- so each thread also notes when its first request left and its last reply came (wall clock), and
-- done() prints the rate over that span.

local ffi = require("ffi")
ffi.cdef [[
    struct sesame_timespec { long tv_sec; long tv_nsec; };
    int clock_gettime(int clock, struct sesame_timespec *now);
]]
local function now_seconds()
    local now = ffi.new("struct sesame_timespec")
    ffi.C.clock_gettime(1, now) -- CLOCK_MONOTONIC
    return tonumber(now.tv_sec) + tonumber(now.tv_nsec) / 1e9
end

local threads = {}

function setup(thread)
    table.insert(threads, thread)
    thread:set("id", #threads)
end

function init(args)
    local path, thread_count, capture = args[1], tonumber(args[2]), args[3]
    if capture == "" then capture = nil end
    authorization = args[4] and ("Bearer " .. args[4]) or nil
    bodies = {}
    local line_number = 0
    for line in io.lines(path) do
        if line_number % thread_count == id - 1 then table.insert(bodies, line) end
        line_number = line_number + 1
    end
    next_body = 1
    statuses = {}
    first_sent, last_received = 0, 0
    if capture then
        captured = io.open(capture .. "." .. id, "w")
        captured:setvbuf("line")
    end
end

function request()
    local body = bodies[next_body]
    if body == nil then
        wrk.thread:stop()
        return wrk.format("GET", "/health/live")
    end
    if next_body == 1 then first_sent = now_seconds() end
    next_body = next_body + 1
    local client = string.format("10.%d.%d.%d", id, math.floor(next_body / 256) % 256, next_body % 256)
    local headers = { ["Content-Type"] = "application/json", ["X-Forwarded-For"] = client }
    if authorization then headers["Authorization"] = authorization end
    return wrk.format("POST", nil, headers, body)
end

function response(status, headers, body)
    statuses[status] = (statuses[status] or 0) + 1
    last_received = now_seconds()
    if captured and status == 200 then
        local token = body:match('"refreshToken"%s*:%s*"([^"]+)"')
        if token then captured:write(token, "\n") end
    end
end

function done(summary, latency, requests)
    local totals, replies, first, last = {}, 0, math.huge, 0
    for _, thread in ipairs(threads) do
        for status, count in pairs(thread:get("statuses")) do
            totals[status] = (totals[status] or 0) + count
            replies = replies + count
        end
        first = math.min(first, thread:get("first_sent"))
        last = math.max(last, thread:get("last_received"))
    end
    for status, count in pairs(totals) do io.write(string.format("status %d: %d\n", status, count)) end
    if last > first then io.write(string.format("replies/sec: %.1f over %.2f s\n", replies / (last - first), last - first)) end
end
