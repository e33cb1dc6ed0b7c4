-- wrk script for the auth benchmark's flood: one client address (forwarded by the trusted gateway,
-- as nginx would) posting to a verification endpoint with a backend key that does not exist, as
-- fast as it can, for as long as wrk runs. done() prints the replies by status
-- ("status N: count"), so the benchmark sees how many the failed-credential limiter refused.
--
-- wrk -s flood.lua URL -- ADDRESS BEARER

local threads = {}

function setup(thread)
    table.insert(threads, thread)
end

function init(args)
    wrk.method = "POST"
    wrk.body = '{"token":"x.y.z"}'
    wrk.headers["Content-Type"] = "application/json"
    wrk.headers["X-Forwarded-For"] = args[1]
    wrk.headers["Authorization"] = "Bearer " .. args[2]
    counts = {}
end

function response(status, headers, body)
    counts[status] = (counts[status] or 0) + 1
end

function done(summary, latency, requests)
    local totals = {}
    for _, thread in ipairs(threads) do
        for status, count in pairs(thread:get("counts")) do totals[status] = (totals[status] or 0) + count end
    end
    for status, count in pairs(totals) do io.write(string.format("status %d: %d\n", status, count)) end
end
