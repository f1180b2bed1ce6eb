/* A software wire between two network namespaces that delays what it carries.
 *
 * The kernels of this machine kind have no netem qdisc, so a link's round trip is made here: each
 * end of the link is a TUN device in its namespace, and this process moves every IP packet from
 * one device to the other after the link's one-way delay (half the round trip), with optional
 * jitter (uniform, never reordering), loss and a rate limit. topology.py builds it from
 * orchestrator/infra/wire/ with the system's C compiler and starts one per shaped link.
 *
 *   delay_wire NETNS_A TUN_A NETNS_B TUN_B SHAPE_FILE
 *
 * NETNS is a path such as /run/netns/bench-123-app, or "-" for the namespace it was started in.
 * SHAPE_FILE holds "delay_us jitter_us loss_ppm rate_bit_s" (0: none), read at start and again on
 * SIGHUP, so that a run reshapes a link between levels without breaking its connections.
 * On SIGTERM it prints what it carried and dropped, and exits.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/if.h>
#include <linux/if_tun.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#define QUEUE 65536          /* packets held per direction; beyond it a packet is dropped */
#define MTU_BUF 65536

typedef struct { int64_t due; int len; unsigned char *data; } packet;
typedef struct {
    int in, out;
    packet q[QUEUE];
    int head, count;
    int64_t last_due, tx_free;   /* FIFO order; when the rate limit's sender is free again */
    uint64_t carried, lost, overflow;
} direction;

static volatile sig_atomic_t reshape = 1, stop = 0;
static int64_t delay_ns, jitter_ns, rate_bps;
static uint32_t loss_ppm;
static const char *shape_file;

static int64_t now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

static void on_hup(int s) { (void)s; reshape = 1; }
static void on_term(int s) { (void)s; stop = 1; }

static void read_shape(void) {
    long long d = 0, j = 0, l = 0, r = 0;
    FILE *f = fopen(shape_file, "r");
    if (!f || fscanf(f, "%lld %lld %lld %lld", &d, &j, &l, &r) != 4) {
        fprintf(stderr, "delay_wire: cannot read %s\n", shape_file);
        exit(2);
    }
    fclose(f);
    delay_ns = d * 1000; jitter_ns = j * 1000; loss_ppm = (uint32_t)l; rate_bps = r;
    fprintf(stderr, "delay_wire: delay %lld us, jitter %lld us, loss %lld ppm, rate %lld bit/s\n", d, j, l, r);
}

static int open_tun(const char *netns, const char *name, int home) {
    int ns = strcmp(netns, "-") ? open(netns, O_RDONLY | O_CLOEXEC) : home;
    if (ns < 0 || setns(ns, CLONE_NEWNET) < 0) { perror(netns); exit(2); }
    int fd = open("/dev/net/tun", O_RDWR | O_CLOEXEC);
    struct ifreq ifr = {0};
    ifr.ifr_flags = IFF_TUN | IFF_NO_PI;
    strncpy(ifr.ifr_name, name, IFNAMSIZ - 1);
    if (fd < 0 || ioctl(fd, TUNSETIFF, &ifr) < 0) { perror(name); exit(2); }
    fcntl(fd, F_SETFL, O_NONBLOCK);
    if (ns != home) close(ns);
    return fd;
}

/* Take every packet waiting on the direction's input and schedule it. */
static void take(direction *d, unsigned char *buf) {
    for (;;) {
        int n = (int)read(d->in, buf, MTU_BUF);
        if (n <= 0) return;
        if (loss_ppm && (uint32_t)(random() % 1000000) < loss_ppm) { d->lost++; continue; }
        if (d->count == QUEUE) { d->overflow++; continue; }
        int64_t t = now_ns(), sent = t;
        if (rate_bps) {   /* serialised at the rate, one packet after the other */
            sent = (d->tx_free > t ? d->tx_free : t) + (int64_t)n * 8 * 1000000000 / rate_bps;
            d->tx_free = sent;
        }
        int64_t due = sent + delay_ns + (jitter_ns ? (int64_t)(random() % (2 * jitter_ns + 1)) - jitter_ns : 0);
        if (due < d->last_due) due = d->last_due;   /* jitter never reorders */
        d->last_due = due;
        packet *p = &d->q[(d->head + d->count) % QUEUE];
        p->data = malloc(n);
        memcpy(p->data, buf, n);
        p->len = n; p->due = due;
        d->count++;
    }
}

/* Deliver what is due; returns the ns until the next packet is, or -1 when none waits. */
static int64_t give(direction *d) {
    int64_t t = now_ns();
    while (d->count) {
        packet *p = &d->q[d->head];
        if (p->due > t) return p->due - t;
        if (write(d->out, p->data, p->len) == p->len) d->carried++;
        else d->lost++;
        free(p->data);
        d->head = (d->head + 1) % QUEUE;
        d->count--;
    }
    return -1;
}

int main(int argc, char **argv) {
    if (argc != 6) {
        fprintf(stderr, "usage: delay_wire NETNS_A TUN_A NETNS_B TUN_B SHAPE_FILE\n");
        return 2;
    }
    shape_file = argv[5];
    int home = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
    int a = open_tun(argv[1], argv[2], home), b = open_tun(argv[3], argv[4], home);
    setns(home, CLONE_NEWNET);
    static direction ab, ba;
    ab.in = a; ab.out = b; ba.in = b; ba.out = a;
    signal(SIGHUP, on_hup);
    signal(SIGTERM, on_term);
    signal(SIGINT, on_term);
    srandom((unsigned)now_ns());
    unsigned char *buf = malloc(MTU_BUF);
    struct pollfd fds[2] = {{a, POLLIN, 0}, {b, POLLIN, 0}};
    while (!stop) {
        if (reshape) { reshape = 0; read_shape(); }
        int64_t w1 = give(&ab), w2 = give(&ba), wait = w1 < 0 ? w2 : (w2 < 0 || w1 < w2 ? w1 : w2);
        struct timespec ts = {wait < 0 ? 1 : wait / 1000000000, wait < 0 ? 0 : wait % 1000000000};
        if (ppoll(fds, 2, &ts, NULL) < 0 && errno != EINTR) { perror("ppoll"); return 1; }
        if (fds[0].revents & POLLIN) take(&ab, buf);
        if (fds[1].revents & POLLIN) take(&ba, buf);
    }
    printf("carried %llu %llu lost %llu %llu overflow %llu %llu\n",
           (unsigned long long)ab.carried, (unsigned long long)ba.carried, (unsigned long long)ab.lost,
           (unsigned long long)ba.lost, (unsigned long long)ab.overflow, (unsigned long long)ba.overflow);
    return 0;
}
