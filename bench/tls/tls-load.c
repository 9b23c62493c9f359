// tls-load: full TLS handshakes per second, one request per connection.
//
//   tls-load <ip> <port> <sni> <path> <connections> <seconds>
//
// Keeps <connections> connections in flight on one thread (epoll). Each one:
// TCP connect, a TLS handshake on a fresh SSL object that was never given a
// session (so never a resumption: the count of resumed handshakes is printed
// and must be 0), `GET <path>` with `Connection: close`, read to the end of
// the response, close. Latency is from connect() to the end of the response.
// Prints one JSON line: requests, errors, non-200, resumed, seconds, p50/p99.
//
// wrk cannot do this: with `Connection: close` it keeps the SSL object and
// its session between connections, so about half of its handshakes resume.
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <gnutls/gnutls.h>
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

enum { CONNECTING, HANDSHAKE, WRITING, READING };

typedef struct {
  int fd;
  gnutls_session_t tls;
  int state;
  double start;
  size_t sent;
  size_t got;
  char head[16];
  size_t head_len;
} conn;

// Latency histogram: 10 µs buckets up to 2 s, then one overflow bucket.
#define BUCKET_US 10
#define BUCKETS 200000
static unsigned int histogram[BUCKETS + 1];

static gnutls_certificate_credentials_t creds;
static gnutls_priority_t priority;
static gnutls_datum_t alpn = {(unsigned char *)"http/1.1", 8};
static struct sockaddr_in addr;
static const char *sni;
static char request[1024];
static size_t request_len;
static int ep;
static unsigned long requests, errors, non200, resumed;

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void record(double seconds) {
  long b = (long)(seconds * 1e6 / BUCKET_US);
  histogram[b < BUCKETS ? b : BUCKETS]++;
}

static double percentile(double p) {
  unsigned long total = 0, seen = 0;
  for (int i = 0; i <= BUCKETS; i++) total += histogram[i];
  if (total == 0) return 0;
  unsigned long want = (unsigned long)(p * total);
  if (want == 0) want = 1;
  for (int i = 0; i <= BUCKETS; i++) {
    seen += histogram[i];
    if (seen >= want) return (i + 0.5) * BUCKET_US / 1000.0;
  }
  return 0;
}

static void open_conn(conn *c) {
  memset(c, 0, sizeof *c);
  c->start = now();
  c->fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
  int one = 1;
  setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  if (connect(c->fd, (struct sockaddr *)&addr, sizeof addr) < 0 && errno != EINPROGRESS) {
    perror("connect");
    exit(1);
  }
  // A fresh session that is never given stored session data: a full handshake.
  gnutls_init(&c->tls, GNUTLS_CLIENT | GNUTLS_NONBLOCK);
  gnutls_priority_set(c->tls, priority);
  gnutls_credentials_set(c->tls, GNUTLS_CRD_CERTIFICATE, creds);
  gnutls_server_name_set(c->tls, GNUTLS_NAME_DNS, sni, strlen(sni));
  gnutls_alpn_set_protocols(c->tls, &alpn, 1, 0);
  gnutls_transport_set_int(c->tls, c->fd);
  c->state = CONNECTING;
  struct epoll_event ev = {.events = EPOLLIN | EPOLLOUT, .data.ptr = c};
  epoll_ctl(ep, EPOLL_CTL_ADD, c->fd, &ev);
}

static void close_conn(conn *c, int failed) {
  if (failed) errors++;
  gnutls_deinit(c->tls);
  close(c->fd);  // also drops it from the epoll set
  open_conn(c);
}

static void want(conn *c) {
  struct epoll_event ev = {.events = gnutls_record_get_direction(c->tls) ? EPOLLOUT : EPOLLIN, .data.ptr = c};
  epoll_ctl(ep, EPOLL_CTL_MOD, c->fd, &ev);
}

static void step(conn *c) {
  for (;;) {
    if (c->state == CONNECTING) {
      int soerr = 0;
      socklen_t len = sizeof soerr;
      getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &soerr, &len);
      if (soerr != 0) return close_conn(c, 1);
      c->state = HANDSHAKE;
    }
    if (c->state == HANDSHAKE) {
      int r = gnutls_handshake(c->tls);
      if (r < 0) {
        if (r == GNUTLS_E_AGAIN || r == GNUTLS_E_INTERRUPTED) return want(c);
        return close_conn(c, 1);
      }
      if (gnutls_session_is_resumed(c->tls)) resumed++;
      c->state = WRITING;
    }
    if (c->state == WRITING) {
      ssize_t r = gnutls_record_send(c->tls, request + c->sent, request_len - c->sent);
      if (r <= 0) {
        if (r == GNUTLS_E_AGAIN || r == GNUTLS_E_INTERRUPTED) return want(c);
        return close_conn(c, 1);
      }
      c->sent += (size_t)r;
      if (c->sent < request_len) continue;
      c->state = READING;
    }
    if (c->state == READING) {
      char buf[16384];
      ssize_t r = gnutls_record_recv(c->tls, buf, sizeof buf);
      if (r > 0) {
        size_t take = sizeof c->head - 1 - c->head_len;
        if (take > (size_t)r) take = (size_t)r;
        memcpy(c->head + c->head_len, buf, take);
        c->head_len += take;
        c->got += (size_t)r;
        continue;
      }
      if (r == GNUTLS_E_AGAIN || r == GNUTLS_E_INTERRUPTED) return want(c);
      // 0 (close_notify) or GNUTLS_E_PREMATURE_TERMINATION (Node closes without
      // one): the server closed after the response (Connection: close), done.
      if (r < 0 && r != GNUTLS_E_PREMATURE_TERMINATION) return close_conn(c, 1);
      if (c->got == 0) return close_conn(c, 1);
      requests++;
      if (strncmp(c->head, "HTTP/1.1 200", 12) != 0) non200++;
      record(now() - c->start);
      return close_conn(c, 0);
    }
  }
}

int main(int argc, char **argv) {
  if (argc != 7) {
    fprintf(stderr, "usage: tls-load <ip> <port> <sni> <path> <connections> <seconds>\n");
    return 2;
  }
  addr.sin_family = AF_INET;
  addr.sin_port = htons((unsigned short)atoi(argv[2]));
  inet_pton(AF_INET, argv[1], &addr.sin_addr);
  sni = argv[3];
  int n = atoi(argv[5]);
  double seconds = atof(argv[6]);
  request_len = (size_t)snprintf(request, sizeof request,
                                 "GET %s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", argv[4], sni);

  gnutls_global_init();
  // No trust anchors and no verification call: the chain is not checked (the
  // handshake's own signature, CertificateVerify, still is).
  gnutls_certificate_allocate_credentials(&creds);
  // One key share, X25519, as browsers and curl send first; GnuTLS's default
  // would add a P-256 share and double the client's key generation.
  if (gnutls_priority_init(&priority, "NORMAL:-GROUP-ALL:+GROUP-X25519", NULL) < 0) return 2;

  ep = epoll_create1(0);
  conn *conns = calloc((size_t)n, sizeof(conn));
  double begin = now(), end = begin + seconds;
  for (int i = 0; i < n; i++) open_conn(&conns[i]);
  struct epoll_event events[256];
  while (now() < end) {
    int k = epoll_wait(ep, events, 256, 100);
    for (int i = 0; i < k; i++) step(events[i].data.ptr);
  }
  double elapsed = now() - begin;
  printf("{\"requests\":%lu,\"errors\":%lu,\"non200\":%lu,\"resumed\":%lu,\"seconds\":%.3f,\"p50_ms\":%.3f,\"p99_ms\":%.3f}\n",
         requests, errors, non200, resumed, elapsed, percentile(0.5), percentile(0.99));
  return 0;
}
