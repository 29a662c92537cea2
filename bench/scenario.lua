-- wrk script for the tunnelgw benchmark (driven by bench/run.py).
--
-- Usage: wrk ... -s bench/scenario.lua http://127.0.0.1:PORT -- get PATHS_FILE
--        wrk ... -s bench/scenario.lua http://127.0.0.1:PORT -- post PATH BODY_FILE
--   get:  GET of each path in PATHS_FILE (one per line) in turn, e.g.
--         /backends/http_response/{id} over ~100 ids, or one list path
--   post: POST of the JSON in BODY_FILE to PATH, repeated
--   mix:  ... -- mix PATHS_FILE POST_PATH BODY_FILE N: the GETs of `get` with a POST of
--         BODY_FILE to POST_PATH in place of every Nth request (reads with writes interleaved)
-- The bearer token comes from the BENCH_TOKEN environment variable.
--
-- Every request carries `Authorization` and `Service-Version: 2`. done() prints one line
-- "BENCH_JSON {...}" with throughput, latency percentiles (microseconds) and error counts
-- (answers of status 400 and above as wrk counts them; run.py then fetches a sample).

local threads = {}

function setup(thread)
    table.insert(threads, thread)
    thread:set("thread_index", #threads)
end

local function read_lines(file_name)
    local found = {}
    local fh = assert(io.open(file_name, "r"), "cannot open " .. tostring(file_name))
    for line in fh:lines() do
        if line ~= "" then
            table.insert(found, line)
        end
    end
    fh:close()
    assert(#found > 0, "no lines in " .. file_name)
    return found
end

local function read_all(file_name)
    local fh = assert(io.open(file_name, "rb"), "cannot open " .. tostring(file_name))
    local content = fh:read("*a")
    fh:close()
    return content
end

local requests_list = {}
local next_index = 1

function init(args)
    local mode = args[1] or "get"
    wrk.headers["Authorization"] = "Bearer " .. (os.getenv("BENCH_TOKEN") or "")
    wrk.headers["Service-Version"] = "2"
    if mode == "get" then
        for _, path in ipairs(read_lines(args[2])) do
            table.insert(requests_list, wrk.format("GET", path))
        end
    elseif mode == "mix" then
        local every = tonumber(args[5])
        local body = read_all(args[4])
        local paths = read_lines(args[2])
        -- wrk.format uses a headers table given to it instead of wrk.headers: copy them.
        local post_headers = {["Content-Type"] = "application/json"}
        for name, value in pairs(wrk.headers) do
            post_headers[name] = value
        end
        for index, path in ipairs(paths) do
            if (index - 1) % (every - 1) == 0 then
                table.insert(requests_list, wrk.format("POST", args[3], post_headers, body))
            end
            table.insert(requests_list, wrk.format("GET", path))
        end
    elseif mode == "post" then
        wrk.headers["Content-Type"] = "application/json"
        table.insert(requests_list, wrk.format("POST", args[2], nil, read_all(args[3])))
    else
        error("unknown mode " .. mode)
    end
    -- Spread the threads over the path list instead of all starting on the same id.
    next_index = ((thread_index or 1) * 37 - 1) % #requests_list + 1
end

function request()
    local req = requests_list[next_index]
    next_index = next_index % #requests_list + 1
    return req
end

local function json_string(text)
    local escaped = string.gsub(text, '[%c"\\]', function(c)
        return string.format("\\u%04x", string.byte(c))
    end)
    return '"' .. escaped .. '"'
end

function done(summary, latency, requests)
    -- wrk counts answers of status 400 and above itself. A Lua response() callback would
    -- copy every response body into Lua, costing wrk (which shares the machine's cores with
    -- the server) most on large responses; run.py fetches a sample when any failed.
    local errors = summary.errors
    local failed, first = errors.status, ""
    local fields = {
        string.format('"requests":%d', summary.requests),
        string.format('"duration_us":%d', summary.duration),
        string.format('"bytes":%d', summary.bytes),
        string.format('"non_2xx":%d', failed),
        string.format('"non_2xx_sample":%s', json_string(first)),
        string.format(
            '"socket_errors":{"connect":%d,"read":%d,"write":%d,"timeout":%d}',
            errors.connect, errors.read, errors.write, errors.timeout
        ),
        string.format('"latency_us":{"mean":%.1f,"max":%d,"p50":%d,"p90":%d,"p99":%d}',
            latency.mean, latency.max, latency:percentile(50), latency:percentile(90),
            latency:percentile(99)),
    }
    io.write("BENCH_JSON {" .. table.concat(fields, ",") .. "}\n")
end
