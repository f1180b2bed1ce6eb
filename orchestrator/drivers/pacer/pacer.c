/* pacer: an open-model HTTP/1.1 load generator. Arrivals come on a fixed schedule (arrival i at
 * t0 + i / rate) whatever the server does, each on an idle keep-alive connection (a new one is
 * opened when none is idle, up to --connections; past that an arrival waits for one, in order).
 * Every arrival's latency is measured from its intended send time, so a stall of the server or of
 * pacer itself counts in full: no coordinated omission.
 *
 * One thread, one epoll loop, woken with nanosecond timeouts (epoll_pwait2) at each arrival's time.
 * Nothing is written during the window: one record per arrival is kept in memory and written at
 * the end (--records), with a JSON summary on stdout. The harness reads the records for its
 * percentiles (one definition for every driver) and per-second series.
 *
 * Record (little-endian, 24 bytes): u64 intended_ns (from t0), u64 latency_ns (intended to the
 * response's last byte; 0 when none), u32 lag_us (intended to the request's first write), i16
 * status (HTTP status; ERR_* below when there was no response), u16 flags (low byte: WAITED when it
 * was due, no connection was idle, so its lag is the server's, not pacer's; high byte: the part of a
 * mix it sent).
 *
 * usage: pacer --host 127.0.0.1 --port 8080 --request FILE --rate R --duration S --connections C
 *              --timeout S --records FILE [--preconnect N] [--tolerance-us U] [--then R2:S2 ...]
 * FILE holds the request's bytes as sent (request line, headers, body). With --ids HOT:EVERY:FIRST:COUNT
 * its first "{id}" is replaced, the k-th time it is sent, by the id of step k of the cycle of
 * config/items.py's IdCycle (HOT, but every EVERY-th time the next of COUNT cold ids from FIRST). Each
 * --then adds a segment of S2 seconds at R2 arrivals a second after the ones before (a spike: --rate
 * 500 --duration 10 --then 2000:10 --then 500:30); the window is all of them.
 *
 * A mix: each --request starts a part, with its own --weight W (default 1) and --ids after it. Each
 * arrival's part is drawn by weight, before the window, from a generator seeded by --seed (default 1),
 * so a run is repeatable and the parts interleave as independent draws would, not in a fixed rotation.
 *
 * Past one CPU: N processes share one schedule. With --stride N --index K this one sends the arrivals
 * i with i % N == K (their parts drawn as one process would draw them), its item cycles from K/N of the
 * way round, with --connections of its own, from --start-at (CLOCK_MONOTONIC ns, the same clock in
 * every process) on; each writes its own records, and the driver merges them.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

enum { ERR_READ = -2, ERR_TIMEOUT = -3, ERR_DROPPED = -4, ERR_WRITE = -5 };
enum { C_CLOSED, C_CONNECTING, C_IDLE, C_BUSY };
enum { P_HEAD, P_BODY, P_CHUNK_SIZE, P_CHUNK_EXT, P_CHUNK_DATA, P_CHUNK_CRLF, P_TRAILER, P_UNTIL_CLOSE };
#define HEAD_MAX 8192

enum { WAITED = 1 };
struct record { uint64_t intended_ns, latency_ns; uint32_t lag_us; int16_t status; uint16_t flags; };

#define PARTS_MAX 16
struct part {
    char *request; size_t request_len; double weight;
    long id_hot, id_every, id_first, id_count; size_t id_at;   /* --ids; id_at: where "{id}" was */
    long sent;                                                 /* how many times it went out: its cycle's step */
};

struct conn {
    int fd, state, parse, status, close_after, got_bytes;
    size_t written, head_len, line_len;
    long long remaining;          /* body bytes (or chunk bytes) still to come */
    long arrival;                 /* the arrival it carries, -1: none */
    uint64_t sent_ns;
    const char *req; size_t req_len;   /* what it sends: the request, or its copy with the arrival's id */
    char *own;                         /* that copy's buffer (a part with --ids) */
    char head[HEAD_MAX];
};

static struct sockaddr_in addr;
static struct part parts[PARTS_MAX]; static int n_parts;
static uint64_t seed = 1;
static long stride = 1, index_of = 0;   /* --stride, --index: this process's share of the arrivals */
static uint64_t start_at;               /* --start-at: CLOCK_MONOTONIC ns of the window's start; 0: now */
#define ID_MARK "{id}"
static double rate, duration_s, timeout_s = 10;
#define SEGMENTS_MAX 9
static double seg_rate[SEGMENTS_MAX], seg_s[SEGMENTS_MAX]; static int segments = 1;   /* [0]: --rate, --duration */
static int max_conns = 1000, preconnect = 0;
static long tolerance_us = 1000;
static const char *records_path;

static struct conn *conns; static int n_open, n_connecting, peak_open;
static int *idle; static int n_idle;             /* a stack: the most recently used first */
static struct record *recs; static long total;   /* one per arrival */
static uint64_t t0;
static long next_due, next_send, done_count;     /* arrivals [next_send, next_due) wait for a connection */
static long marked_upto;                         /* arrivals below it that waited are flagged WAITED */
static int epfd;
/* late: sent more than the tolerance after its time although a connection was idle (pacer's own lag);
 * queued: found no idle connection when due (every connection busy, or a new one still connecting) */
static long errors_connect, errors_read, errors_write, errors_timeout, dropped, late, queued, closed_by_server;
static long long bytes_in;
static uint64_t last_connect_error_ns; static int failing;   /* the last connect failed */
static volatile sig_atomic_t stop;

static uint64_t now_ns(void) {
    struct timespec ts; clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* splitmix64: a small generator whose draws are independent enough for picking a part by weight */
static uint64_t next_random(void) {
    uint64_t z = (seed += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static int draw_part(void) {
    if (n_parts == 1) return 0;
    double total = 0; for (int k = 0; k < n_parts; k++) total += parts[k].weight;
    double u = (double)(next_random() >> 11) / 9007199254740992.0 * total;   /* [0, total) */
    for (int k = 0; k < n_parts - 1; k++) { if (u < parts[k].weight) return k; u -= parts[k].weight; }
    return n_parts - 1;
}

/* each segment's arrivals at its own rate from its start, each with its part; returns how many
 * there are in all */
static long schedule(struct record *out) {
    long i = 0, own = 0; double start_s = 0;
    for (int k = 0; k < segments; k++) {
        long n = (long)(seg_rate[k] * seg_s[k]);
        for (long j = 0; j < n; j++, i++) {
            int part = out ? draw_part() : 0;   /* every arrival's draw, so that each process draws alike */
            if (i % stride != index_of) continue;
            if (out) {
                out[own].intended_ns = (uint64_t)(start_s * 1e9 + 0.5) + (uint64_t)((double)j * 1e9 / seg_rate[k] + 0.5);
                out[own].flags = (uint16_t)(part << 8);
            }
            own++;
        }
        start_s += seg_s[k];
    }
    return own;
}

static void finish(long i, uint64_t t, int status) {
    if (status > 999) status = 999;
    struct record *r = &recs[i];
    r->status = status;
    r->latency_ns = status > 0 ? t - t0 - r->intended_ns : 0;
    done_count++;
}

static void watch(struct conn *c, uint32_t events, int op) {
    struct epoll_event ev = { .events = events, .data.u32 = (uint32_t)(c - conns) };
    epoll_ctl(epfd, op, c->fd, &ev);
}

static void close_conn(struct conn *c) {
    if (c->state == C_CLOSED) return;
    if (c->state == C_CONNECTING) n_connecting--;
    if (c->state == C_IDLE) {                        /* off the idle stack */
        for (int k = 0; k < n_idle; k++) if (idle[k] == c - conns) { idle[k] = idle[--n_idle]; break; }
    }
    close(c->fd);
    c->state = C_CLOSED; c->arrival = -1; n_open--;
}

static void fail(struct conn *c, int status, long *counter) {
    if (c->arrival >= 0) { finish(c->arrival, now_ns(), status); (*counter)++; }
    c->arrival = -1;
    close_conn(c);
}

static int open_conn(void) {
    for (int k = 0; k < max_conns; k++) {
        struct conn *c = &conns[k];
        if (c->state != C_CLOSED) continue;
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (fd < 0) { errors_connect++; return -1; }
        int one = 1; setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        c->fd = fd; c->arrival = -1; n_open++;
        if (connect(fd, (struct sockaddr *)&addr, sizeof addr) < 0 && errno != EINPROGRESS) {
            close(fd); n_open--; errors_connect++; last_connect_error_ns = now_ns(); failing = 1; return -1;
        }
        c->state = C_CONNECTING; n_connecting++;
        if (n_open > peak_open) peak_open = n_open;
        watch(c, EPOLLOUT, EPOLL_CTL_ADD);
        return k;
    }
    return -1;
}

static void make_idle(struct conn *c) {
    c->state = C_IDLE; c->arrival = -1;
    idle[n_idle++] = (int)(c - conns);
}

static void send_on(struct conn *c, long i, uint64_t t) {
    c->state = C_BUSY; c->arrival = i; c->sent_ns = t; c->written = 0;
    c->parse = P_HEAD; c->head_len = 0; c->status = 0; c->close_after = 0; c->got_bytes = 0;
    uint64_t lag = t - t0 - recs[i].intended_ns;
    recs[i].lag_us = lag / 1000 > UINT32_MAX ? UINT32_MAX : (uint32_t)(lag / 1000);
    if (lag / 1000 > (uint64_t)tolerance_us && !(recs[i].flags & WAITED)) late++;
    struct part *p = &parts[recs[i].flags >> 8];
    c->req = p->request; c->req_len = p->request_len;
    if (p->id_every) {
        long k = p->sent % (p->id_every * p->id_count);
        long id = k % p->id_every == 0 ? p->id_first + k / p->id_every : p->id_hot;
        size_t tail = p->request_len - p->id_at - strlen(ID_MARK);
        memcpy(c->own, p->request, p->id_at);
        int digits = sprintf(c->own + p->id_at, "%ld", id);
        memcpy(c->own + p->id_at + digits, p->request + p->id_at + strlen(ID_MARK), tail);
        c->req = c->own; c->req_len = p->id_at + (size_t)digits + tail;
    }
    p->sent++;
    ssize_t n = write(c->fd, c->req, c->req_len);
    if (n < 0 && errno != EAGAIN) { fail(c, ERR_WRITE, &errors_write); return; }
    c->written = n < 0 ? 0 : (size_t)n;
    if (c->written < c->req_len) watch(c, EPOLLIN | EPOLLOUT, EPOLL_CTL_MOD);
}

/* Arrivals that are due go out on idle connections; for those left waiting, connections are opened
 * (one per waiting arrival, up to the limit). An arrival that waited longer than the timeout
 * without a connection is dropped: it was never sent. */
static void dispatch(uint64_t t) {
    uint64_t since = t - t0;
    while (next_due < total && recs[next_due].intended_ns <= since) next_due++;
    while (next_send < next_due) {
        if (since - recs[next_send].intended_ns > (uint64_t)(timeout_s * 1e9)) {
            recs[next_send].status = ERR_DROPPED; dropped++; done_count++; next_send++; continue;
        }
        if (!n_idle) {   /* this one and every one due behind it wait for the server to free a connection */
            for (long i = next_send > marked_upto ? next_send : marked_upto; i < next_due; i++) {
                recs[i].flags |= WAITED; queued++;
            }
            if (next_due > marked_upto) marked_upto = next_due;
            break;
        }
        send_on(&conns[idle[--n_idle]], next_send++, t);
    }
    long waiting = next_due - next_send;
    /* after a refused connect, one at a time 10 ms apart until one succeeds: a server that is down is
     * not hammered */
    while (waiting > n_connecting && n_open < max_conns
           && (!failing || (!n_connecting && t - last_connect_error_ns > 10000000ull))) {
        if (open_conn() < 0 || failing) break;
    }
}

/* Feeds bytes of a response to the connection's parser; returns 1 when the response is complete. */
static int parse(struct conn *c, const char *p, size_t n) {
    size_t k = 0;
    while (k < n) {
        switch (c->parse) {
        case P_HEAD: {
            size_t take = n - k < HEAD_MAX - c->head_len ? n - k : HEAD_MAX - c->head_len;
            if (!take) return -1;                     /* headers beyond HEAD_MAX */
            size_t from = c->head_len > 3 ? c->head_len - 3 : 0;
            memcpy(c->head + c->head_len, p + k, take);
            c->head_len += take;
            char *end = memmem(c->head + from, c->head_len - from, "\r\n\r\n", 4);
            if (!end) { k += take; break; }
            size_t head_bytes = (size_t)(end - c->head) + 4;
            k += take - (c->head_len - head_bytes);     /* the rest of this read is body */
            *end = 0;
            if (strncmp(c->head, "HTTP/1.", 7) || c->head_len < 12) return -1;
            c->status = atoi(c->head + 9);
            int chunked = 0; long long length = -1;
            for (char *line = strstr(c->head, "\r\n"); line; line = strstr(line, "\r\n")) {
                line += 2;
                if (!strncasecmp(line, "content-length:", 15)) length = atoll(line + 15);
                else if (!strncasecmp(line, "transfer-encoding:", 18) && strcasestr(line, "chunked")) chunked = 1;
                else if (!strncasecmp(line, "connection:", 11)) {
                    char *eol = strstr(line, "\r\n"); char save = 0;
                    if (eol) { save = *eol; *eol = 0; }
                    if (strcasestr(line, "close")) c->close_after = 1;
                    if (eol) *eol = save;
                }
            }
            if (!strncmp(c->head, "HTTP/1.0", 8)) c->close_after = 1;
            if (c->status < 200 || c->status == 204 || c->status == 304) return 1;
            if (chunked) { c->parse = P_CHUNK_SIZE; c->remaining = 0; c->line_len = 0; }
            else if (length >= 0) { c->parse = P_BODY; c->remaining = length; if (!length) return 1; }
            else { c->parse = P_UNTIL_CLOSE; c->close_after = 1; }
            break;
        }
        case P_BODY: {
            size_t take = (long long)(n - k) < c->remaining ? n - k : (size_t)c->remaining;
            c->remaining -= take; k += take;
            if (!c->remaining) return 1;
            break;
        }
        case P_CHUNK_SIZE: {
            char ch = p[k++];
            if (ch >= '0' && ch <= '9') c->remaining = c->remaining * 16 + (ch - '0');
            else if ((ch | 32) >= 'a' && (ch | 32) <= 'f') c->remaining = c->remaining * 16 + ((ch | 32) - 'a' + 10);
            else if (ch == ';') c->parse = P_CHUNK_EXT;
            else if (ch == '\n') { c->parse = c->remaining ? P_CHUNK_DATA : P_TRAILER; c->line_len = 0; }
            else if (ch != '\r' && ch != ' ' && ch != '\t') return -1;
            break;
        }
        case P_CHUNK_EXT:
            if (p[k++] == '\n') { c->parse = c->remaining ? P_CHUNK_DATA : P_TRAILER; c->line_len = 0; }
            break;
        case P_CHUNK_DATA: {
            size_t take = (long long)(n - k) < c->remaining ? n - k : (size_t)c->remaining;
            c->remaining -= take; k += take;
            if (!c->remaining) c->parse = P_CHUNK_CRLF;
            break;
        }
        case P_CHUNK_CRLF:
            if (p[k++] == '\n') { c->parse = P_CHUNK_SIZE; c->remaining = 0; }
            break;
        case P_TRAILER: {                                 /* trailer lines, up to an empty one */
            char ch = p[k++];
            if (ch == '\n') { if (!c->line_len) return 1; c->line_len = 0; }
            else if (ch != '\r') c->line_len++;
            break;
        }
        case P_UNTIL_CLOSE:
            k = n;
            break;
        }
    }
    return 0;
}

static void readable(struct conn *c) {
    static char buf[65536];
    for (;;) {
        ssize_t n = read(c->fd, buf, sizeof buf);
        if (n > 0) {
            bytes_in += n; c->got_bytes = 1;
            if (c->state != C_BUSY) { close_conn(c); return; }   /* bytes nobody asked for */
            int r = parse(c, buf, (size_t)n);
            if (r < 0) { fail(c, ERR_READ, &errors_read); return; }
            if (r == 1) {
                finish(c->arrival, now_ns(), c->status);
                if (c->close_after) { c->arrival = -1; close_conn(c); closed_by_server++; }
                else make_idle(c);
                return;
            }
            continue;
        }
        if (n < 0 && (errno == EAGAIN || errno == EINTR)) return;
        /* end of stream, or an error */
        if (c->state == C_BUSY && c->parse == P_UNTIL_CLOSE && n == 0) {
            finish(c->arrival, now_ns(), c->status); c->arrival = -1; close_conn(c); return;
        }
        if (c->state == C_BUSY) fail(c, ERR_READ, &errors_read);
        else { close_conn(c); closed_by_server++; }
        return;
    }
}

static void writable(struct conn *c, uint64_t t) {
    if (c->state == C_CONNECTING) {
        int err = 0; socklen_t len = sizeof err;
        getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &len);
        if (err) { errors_connect++; last_connect_error_ns = t; failing = 1; close_conn(c); return; }
        n_connecting--; failing = 0;
        watch(c, EPOLLIN, EPOLL_CTL_MOD);
        make_idle(c);
        return;
    }
    if (c->state != C_BUSY || c->written >= c->req_len) return;
    ssize_t n = write(c->fd, c->req + c->written, c->req_len - c->written);
    if (n < 0) { if (errno != EAGAIN) fail(c, ERR_WRITE, &errors_write); return; }
    c->written += (size_t)n;
    if (c->written >= c->req_len) watch(c, EPOLLIN, EPOLL_CTL_MOD);
}

static void expire(uint64_t t) {
    for (int k = 0; k < max_conns; k++) {
        struct conn *c = &conns[k];
        if (c->state == C_BUSY && t - c->sent_ns > (uint64_t)(timeout_s * 1e9)) fail(c, ERR_TIMEOUT, &errors_timeout);
    }
}

static void on_signal(int sig) { (void)sig; stop = 1; }

static char *read_file(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) { perror(path); exit(2); }
    fseek(f, 0, SEEK_END); long n = ftell(f); fseek(f, 0, SEEK_SET);
    char *b = malloc((size_t)n + 1);
    if (!b || fread(b, 1, (size_t)n, f) != (size_t)n) { fprintf(stderr, "pacer: cannot read %s\n", path); exit(2); }
    fclose(f); *len = (size_t)n; return b;
}

static void usage(const char *why) {
    fprintf(stderr, "pacer: %s\nusage: pacer --host IP --port N --request FILE --rate R --duration S "
                    "--connections C --timeout S --records FILE [--preconnect N] [--tolerance-us U] [--then RATE:SECONDS ...] "
                    "[--ids HOT:EVERY:FIRST:COUNT] [--weight W] [--request FILE [--weight W] [--ids ...] ...] [--seed N]\n", why);
    exit(2);
}

int main(int argc, char **argv) {
    const char *host = "127.0.0.1", *request_paths[PARTS_MAX]; int port = 0;
#ifndef PACER_SOURCE
#define PACER_SOURCE "unknown"
#endif
    if (argc == 2 && !strcmp(argv[1], "--version")) { printf("pacer (pacer.c sha256 %s)\n", PACER_SOURCE); return 0; }
    for (int k = 1; k < argc; k++) {
        const char *a = argv[k], *v = k + 1 < argc ? argv[k + 1] : NULL;
        if (!v) usage("every option takes a value");
        if (!strcmp(a, "--host")) host = v;
        else if (!strcmp(a, "--port")) port = atoi(v);
        else if (!strcmp(a, "--request")) {
            if (n_parts == PARTS_MAX) usage("at most 16 --request parts");
            request_paths[n_parts] = v; parts[n_parts++].weight = 1;
        }
        else if (!strcmp(a, "--weight")) {
            char *end; double w = strtod(v, &end);
            if (!n_parts || *end || !(w > 0)) usage("--weight takes a number > 0, after its --request");
            parts[n_parts - 1].weight = w;
        }
        else if (!strcmp(a, "--seed")) seed = strtoull(v, NULL, 10);
        else if (!strcmp(a, "--stride")) stride = atol(v);
        else if (!strcmp(a, "--index")) index_of = atol(v);
        else if (!strcmp(a, "--start-at")) start_at = strtoull(v, NULL, 10);
        else if (!strcmp(a, "--rate")) rate = atof(v);
        else if (!strcmp(a, "--duration")) duration_s = atof(v);
        else if (!strcmp(a, "--connections")) max_conns = atoi(v);
        else if (!strcmp(a, "--timeout")) timeout_s = atof(v);
        else if (!strcmp(a, "--records")) records_path = v;
        else if (!strcmp(a, "--preconnect")) preconnect = atoi(v);
        else if (!strcmp(a, "--tolerance-us")) tolerance_us = atol(v);
        else if (!strcmp(a, "--ids")) {
            struct part *p = &parts[n_parts ? n_parts - 1 : 0];
            if (!n_parts || sscanf(v, "%ld:%ld:%ld:%ld", &p->id_hot, &p->id_every, &p->id_first, &p->id_count) != 4
                || p->id_every <= 0 || p->id_count <= 0 || p->id_hot < 0 || p->id_first < 0)
                usage("--ids takes HOT:EVERY:FIRST:COUNT, EVERY and COUNT > 0, after its --request");
        }
        else if (!strcmp(a, "--then")) {
            if (segments == SEGMENTS_MAX) usage("at most 8 --then segments");
            if (sscanf(v, "%lf:%lf", &seg_rate[segments], &seg_s[segments]) != 2 || seg_rate[segments] <= 0
                || seg_s[segments] <= 0) usage("--then takes RATE:SECONDS, both > 0");
            segments++;
        }
        else usage("unknown option");
        k++;
    }
    if (!n_parts || !records_path || port <= 0 || port > 65535) usage("--request, --records and --port are needed");
    if (rate <= 0 || duration_s <= 0 || max_conns <= 0 || timeout_s <= 0) usage("rate, duration, connections and timeout must be > 0");
    if (stride < 1 || index_of < 0 || index_of >= stride) usage("--index must be from 0 to --stride - 1");
    addr.sin_family = AF_INET; addr.sin_port = htons((uint16_t)port);
    if (inet_pton(AF_INET, host, &addr.sin_addr) != 1) usage("--host must be an IPv4 address");
    size_t longest = 0; int any_ids = 0;
    for (int k = 0; k < n_parts; k++) {
        struct part *p = &parts[k];
        p->request = read_file(request_paths[k], &p->request_len);
        if (p->request_len > longest) longest = p->request_len;
        if (!p->id_every) continue;
        char *mark = memmem(p->request, p->request_len, ID_MARK, strlen(ID_MARK));
        if (!mark) usage("--ids needs \"" ID_MARK "\" in its request");
        p->id_at = (size_t)(mark - p->request); any_ids = 1;
        p->sent = index_of * (p->id_every * p->id_count) / stride;   /* its share of the cycle, from K/N round */
    }

    struct rlimit rl; getrlimit(RLIMIT_NOFILE, &rl);
    if (rl.rlim_cur < (rlim_t)max_conns + 64) {
        rl.rlim_cur = rl.rlim_max < (rlim_t)max_conns + 64 ? rl.rlim_max : (rlim_t)max_conns + 64;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
    seg_rate[0] = rate; seg_s[0] = duration_s;
    for (int k = 1; k < segments; k++) duration_s += seg_s[k];
    total = schedule(NULL);
    conns = calloc((size_t)max_conns, sizeof *conns);
    idle = calloc((size_t)max_conns, sizeof *idle);
    recs = calloc((size_t)(total ? total : 1), sizeof *recs);
    if (!conns || !idle || !recs) { fprintf(stderr, "pacer: out of memory for %ld arrivals\n", total); return 2; }
    schedule(recs);
    for (long i = 0; i < total; i++) recs[i].status = ERR_DROPPED;
    for (int k = 0; k < max_conns; k++) {
        conns[k].state = C_CLOSED; conns[k].arrival = -1;
        if (any_ids && !(conns[k].own = malloc(longest + 24))) { fprintf(stderr, "pacer: out of memory\n"); return 2; }
    }
    signal(SIGPIPE, SIG_IGN); signal(SIGINT, on_signal); signal(SIGTERM, on_signal);
    prctl(PR_SET_TIMERSLACK, 1UL);   /* wake at the arrival's time, not up to 50 us after it */
    epfd = epoll_create1(EPOLL_CLOEXEC);

    /* connections opened before the window, so that its first arrivals do not wait for handshakes */
    struct epoll_event evs[256];
    uint64_t t = now_ns();
    for (int k = 0; k < preconnect && k < max_conns; k++) open_conn();
    while (n_connecting && now_ns() - t < 2000000000ull && !stop) {
        int n = epoll_wait(epfd, evs, 256, 100);
        for (int e = 0; e < n; e++) writable(&conns[evs[e].data.u32], now_ns());
    }
    if (start_at) {   /* the processes of one schedule start it together */
        struct timespec at = { .tv_sec = (time_t)(start_at / 1000000000ull), .tv_nsec = (long)(start_at % 1000000000ull) };
        while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &at, NULL) == EINTR && !stop) {}
    }
    struct timespec wall; clock_gettime(CLOCK_REALTIME, &wall);
    t0 = start_at ? start_at : now_ns();   /* a process that woke late is late by its records, not realigned */
    uint64_t end_ns = (uint64_t)(duration_s * 1e9), last_expire = t0;
    uint64_t give_up = end_ns + (uint64_t)(timeout_s * 1e9) + 1000000000ull;
    while (!stop) {
        t = now_ns();
        dispatch(t);
        if (done_count >= total) break;
        if (t - t0 > give_up) break;
        if (t - last_expire > 10000000ull) { expire(t); last_expire = t; }
        /* sleep until the next arrival (or 10 ms: timeouts), unless one is waiting for a connection */
        uint64_t wait = 10000000ull;
        if (next_due < total) {
            uint64_t at = recs[next_due].intended_ns, since = t - t0;
            wait = at > since ? (at - since < wait ? at - since : wait) : 0;
        }
        struct timespec ts = { .tv_sec = 0, .tv_nsec = (long)wait };
        int n = epoll_pwait2(epfd, evs, 256, &ts, NULL);
        if (n < 0) { if (errno == EINTR) continue; perror("epoll_pwait2"); return 1; }
        t = now_ns();
        for (int e = 0; e < n; e++) {
            struct conn *c = &conns[evs[e].data.u32];
            if (evs[e].events & (EPOLLOUT | EPOLLERR | EPOLLHUP) && c->state != C_IDLE) writable(c, t);
            if (c->state != C_CLOSED && evs[e].events & (EPOLLIN | EPOLLERR | EPOLLHUP)) readable(c);
        }
    }
    uint64_t window_ns = now_ns() - t0;
    /* what is still in flight at the end failed; what was never sent was dropped */
    for (int k = 0; k < max_conns; k++) if (conns[k].state == C_BUSY) fail(&conns[k], ERR_TIMEOUT, &errors_timeout);
    long sent = 0, answered = 0;
    for (long i = 0; i < total; i++) {
        if (recs[i].status == ERR_DROPPED) { if (i >= next_send) dropped++; }
        else sent++;
        if (recs[i].status > 0) answered++;
    }
    FILE *out = fopen(records_path, "wb");
    if (!out || fwrite(recs, sizeof *recs, (size_t)total, out) != (size_t)total || fclose(out)) {
        perror(records_path); return 1;
    }
    struct rusage ru; getrusage(RUSAGE_SELF, &ru);
    printf("{\"arrivals\": %ld, \"sent\": %ld, \"answered\": %ld, \"dropped\": %ld, \"late\": %ld, "
           "\"queued\": %ld, \"errors_connect\": %ld, \"errors_read\": %ld, \"errors_write\": %ld, "
           "\"errors_timeout\": %ld, \"closed_by_server\": %ld, \"bytes\": %lld, \"rate\": %.3f, "
           "\"duration_s\": %.6f, \"window_s\": %.6f, \"started_at\": %ld.%09ld, \"max_connections_open\": %d, "
           "\"tolerance_us\": %ld, \"interrupted\": %s, \"cpu_s\": %.6f}\n",
           total, sent, answered, dropped, late, queued, errors_connect, errors_read, errors_write,
           errors_timeout, closed_by_server, bytes_in, rate, duration_s, (double)window_ns / 1e9,
           (long)wall.tv_sec, wall.tv_nsec, peak_open, tolerance_us, stop ? "true" : "false",
           ru.ru_utime.tv_sec + ru.ru_stime.tv_sec + (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6);
    return 0;
}
