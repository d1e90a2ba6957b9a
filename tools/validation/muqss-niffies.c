// muqss-niffies: how far apart MuQSS's per-CPU niffies stand in a guest,
// and where 3 spinners on 2 CPUs end up. MuQSS stamps a deadline on the
// stamping CPU's rq->niffies and /proc/PID/stat's priority (field 18) is
// task_prio(): 1 + (deadline - task_rq(p)->niffies) ms x 40 / the nice 19
// deadline (about 246 ms), one step per 6.2 ms. A nice 19 thread waits on
// CPU A until its priority rises (a new deadline stamped there), moves to
// CPU B and reads it again: `cross` above `same` by k steps puts B's niffies
// k x 6.2 ms behind A's. Then 3 threads spin (no system calls, as
// schedlab's runner spins) for SPIN_MS and print the time each spent on
// each CPU, and the reading is taken again.
//
//   gcc -O2 -pthread -o muqss-niffies tools/validation/muqss-niffies.c
//   schedlab vm --kernel ../shared/kernels/muqss-5.10.bzImage --accel tcg
//       --boot-arg rqshare=mc --cpus 2 -- ./muqss-niffies 6 1000
//
// Output: `stamp_on=A read_on=B same=P cross=Q after_us=T steps: ...` per
// reading (steps: each change of the priority read on B, at microseconds
// after the stamp), then `spinner N: cpu0 X ms cpu1 Y ms`. A priority of 1
// is out of range (the niffies are more than about 250 ms apart).
//
// Arguments: readings (default 40, alternating directions), SPIN_MS (1000).
#define _GNU_SOURCE
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <sys/resource.h>

static double now_us(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec * 1e6 + t.tv_nsec / 1e3; }
static int read_prio(pid_t tid) {
  char path[64], buf[512]; snprintf(path, sizeof path, "/proc/self/task/%d/stat", tid);
  FILE *f = fopen(path, "r"); if (!f) return -1000;
  size_t n = fread(buf, 1, sizeof buf - 1, f); fclose(f); buf[n] = 0;
  char *p = strrchr(buf, ')'); if (!p) return -1000; p += 2;
  // fields from 3 (state): priority is field 18
  int field = 3; char *tok = strtok(p, " ");
  while (tok && field < 18) { tok = strtok(NULL, " "); field++; }
  return tok ? atoi(tok) : -1000;
}
static void pin(int cpu) { cpu_set_t s; CPU_ZERO(&s); CPU_SET(cpu, &s); sched_setaffinity(0, sizeof s, &s); }

static volatile int stop;
static double cpu_on[3][2];
static void *spin(void *arg) {
  // Time between two reads counts for the CPU of the second, unless the
  // thread was off its CPU in between (a gap over 200 us).
  long id = (long)arg; double last = now_us();
  while (!stop) { double t = now_us(); int c = sched_getcpu(); if (t - last < 200) cpu_on[id][c & 1] += t - last; last = t; }
  return NULL;
}

static void probe(int iters) {
  pid_t tid = syscall(SYS_gettid);
  setpriority(PRIO_PROCESS, tid, 19);
  for (int k = 0; k < iters; k++) {
    int a = k & 1, b = 1 - a;
    pin(a);
    while (sched_getcpu() != a) ;
    // wait for a fresh deadline stamped on a: prio rises
    int p = read_prio(tid), q; double t0 = now_us();
    for (;;) { q = read_prio(tid); if (q > p) break; p = q; if (now_us() - t0 > 100000) break; }
    double ts = now_us(); int same = q;
    pin(b);
    while (sched_getcpu() != b) ;
    double tr = now_us(); int cross = read_prio(tid);
    // follow the readout on b for 5 ms: times of each step
    printf("stamp_on=%d read_on=%d same=%d cross=%d after_us=%.0f steps:", a, b, same, cross, tr - ts);
    int last = cross; double end = tr + 5000;
    while (now_us() < end) { int r = read_prio(tid); if (r != last) { printf(" %d@%.0f", r, now_us() - ts); last = r; } }
    printf("\n");
  }
  fflush(stdout);
  setpriority(PRIO_PROCESS, tid, 0);
}
int main(int argc, char **argv) {
  int iters = argc > 1 ? atoi(argv[1]) : 40;
  probe(iters);
  cpu_set_t all; CPU_ZERO(&all); CPU_SET(0, &all); CPU_SET(1, &all); sched_setaffinity(0, sizeof all, &all);
  pthread_t th[3];
  for (long i = 0; i < 3; i++) pthread_create(&th[i], NULL, spin, (void *)i);
  usleep((argc > 2 ? atoi(argv[2]) : 1000) * 1000); stop = 1;
  for (int i = 0; i < 3; i++) pthread_join(th[i], NULL);
  for (int i = 0; i < 3; i++) printf("spinner %d: cpu0 %.0f ms cpu1 %.0f ms\n", i, cpu_on[i][0] / 1000, cpu_on[i][1] / 1000);
  probe(iters);
  return 0;
}
