// The dashboard page (page.html, embedded at build time). It reads the server's own /metrics (Prometheus text) and
// /dashboard/requests every second and draws TTFT / TPOT percentiles, tokens/s, running and waiting requests, KV-cache
// use and the prefix-cache hit rate; a playground streams /v1/chat/completions.
#pragma once

#include <string_view>

namespace tern::dashboard {

std::string_view page_html();

}  // namespace tern::dashboard
