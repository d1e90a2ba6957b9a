// scx-dispatch-window: how long a sched_ext CPU's tick takes to reach its
// dispatch and its put_prev in a guest, and how far apart the two CPUs'
// ticks come: what decides whether the second CPU's dispatch finds the
// worker the first CPU preempted (bpfland's 3 hogs on 2 CPUs).
//
// Kprobes (the scx-6.12 guest is built with KPROBE_EVENTS) on the tick
// (task_tick_scx), the dispatch (balance_scx, and scx_bpf_consume's return:
// did it find a task), the put-back (put_prev_task_scx) and the enqueue's
// insert (scx_bpf_dispatch_vtime), with sched_switch, in a tracefs instance
// of its own, while SPINNERS threads spin for SPIN_MS; the raw trace is
// printed for tools/validation/scx-dispatch-window.py.
//
//   gcc -O2 -pthread -o scx-dispatch-window tools/validation/scx-dispatch-window.c
//   schedlab vm --kernel ../shared/kernels/scx-6.12.bzImage --scx bpfland --accel tcg
//       --cpus 2 --no-trace -- ./scx-dispatch-window 3 1000 > window.txt
//   python3 tools/validation/scx-dispatch-window.py window.txt
//
// Arguments: SPINNERS (default 3), SPIN_MS (1000), NOPROBES (any third
// argument: the same run with only sched_switch, to see what the probes
// cost the switch rate). Or `run COMMAND [ARGS...]`: the same probes, with
// sched_waking and sched_migrate_task, while COMMAND runs in place of the
// spinners (a workload of schedlab's own runner, say:
// `-- ./scx-dispatch-window run ./schedlab host make-j4 --cpus 4 --no-trace`
// with `--include` of the two binaries). `run-sched COMMAND...`: the same
// without the kprobes (a 256-thread run under them crashed the guest once).
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static const char *tracefs = "/sys/kernel/tracing";
static char inst[256];

static void put(const char *dir, const char *file, const char *text, int append) {
  char path[512];
  snprintf(path, sizeof path, "%s/%s", dir, file);
  int fd = open(path, O_WRONLY | (append ? O_APPEND : O_TRUNC));
  if (fd < 0 || write(fd, text, strlen(text)) < 0) {
    fprintf(stderr, "write %s <- %s: %s\n", path, text, strerror(errno));
    exit(1);
  }
  close(fd);
}

static volatile int stop;
static void *spin(void *arg) {
  (void)arg;
  volatile unsigned long n = 0;
  while (!stop) n++;
  return NULL;
}

int main(int argc, char **argv) {
  int sched_only = argc > 2 && strcmp(argv[1], "run-sched") == 0;
  int command = argc > 2 && (strcmp(argv[1], "run") == 0 || sched_only);
  int spinners = command ? 0 : argc > 1 ? atoi(argv[1]) : 3;
  int spin_ms = command ? 0 : argc > 2 ? atoi(argv[2]) : 1000;
  int probes = command ? !sched_only : argc <= 3;
  struct stat st;
  if (stat(tracefs, &st) != 0) tracefs = "/sys/kernel/debug/tracing";
  snprintf(inst, sizeof inst, "%s/instances/scxwin", tracefs);
  rmdir(inst);
  if (probes) {
    put(tracefs, "kprobe_events",
        "p:scxwin/tick task_tick_scx\n"
        "p:scxwin/bal balance_scx\n"
        "r:scxwin/consumed scx_bpf_consume ret=$retval\n"
        "p:scxwin/put put_prev_task_scx\n"
        "p:scxwin/insert scx_bpf_dispatch_vtime\n",
        1);
  }
  if (mkdir(inst, 0700) != 0) {
    fprintf(stderr, "mkdir %s: %s\n", inst, strerror(errno));
    return 1;
  }
  put(inst, "buffer_size_kb", command ? "65536" : "8192", 0);
  put(inst, "events/sched/sched_switch/enable", "1", 0);
  if (command) {
    put(inst, "events/sched/sched_waking/enable", "1", 0);
    put(inst, "events/sched/sched_migrate_task/enable", "1", 0);
  }
  if (probes) put(inst, "events/scxwin/enable", "1", 0);
  put(inst, "tracing_on", "1", 0);
  pthread_t th[64];
  if (spinners > 64) spinners = 64;
  for (int i = 0; i < spinners; i++) pthread_create(&th[i], NULL, spin, NULL);
  if (command) {
    pid_t pid = fork();
    if (pid == 0) {
      dup2(2, 1);  // the command's report goes to stderr, the trace alone to stdout
      execv(argv[2], argv + 2);
      perror(argv[2]);
      _exit(127);
    }
    int status;
    waitpid(pid, &status, 0);
  } else {
    struct timespec ts = {spin_ms / 1000, (spin_ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
  }
  put(inst, "tracing_on", "0", 0);
  stop = 1;
  for (int i = 0; i < spinners; i++) pthread_join(th[i], NULL);
  char path[512], buf[65536];
  snprintf(path, sizeof path, "%s/trace", inst);
  if (command) {
    // A whole workload's trace is megabytes: each line is cut to what the
    // .py reads (time, CPU, event, and the fields named below).
    FILE *f = fopen(path, "r");
    static const char *keep[] = {"prev_comm=", "prev_pid=", "prev_state=", "next_comm=", "next_pid=",
                                 "pid=", "target_cpu=", "orig_cpu=", "dest_cpu=", "ret=", NULL};
    while (f && fgets(buf, sizeof buf, f)) {
      char *cpu = strchr(buf, '[');
      char *colon = cpu ? strstr(cpu, ": ") : NULL;
      if (buf[0] == '#' || !cpu || !colon) continue;
      char *ts = colon;
      while (ts > cpu && ts[-1] != ' ') ts--;
      char *ev = colon + 2, *evend = strchr(ev, ':');
      if (!evend) continue;
      *colon = 0;
      *evend = 0;
      printf("%s %.*s %s", ts, 3, cpu + 1, ev);
      for (char *tok = strtok(evend + 1, " \n"); tok; tok = strtok(NULL, " \n"))
        for (int k = 0; keep[k]; k++)
          if (strncmp(tok, keep[k], strlen(keep[k])) == 0) printf(" %s", tok);
      printf("\n");
    }
    if (f) fclose(f);
  } else {
    int fd = open(path, O_RDONLY);
    ssize_t n;
    while ((n = read(fd, buf, sizeof buf)) > 0) fwrite(buf, 1, n, stdout);
    close(fd);
  }
  fflush(stdout);
  put(inst, "events/sched/sched_switch/enable", "0", 0);
  if (probes) put(inst, "events/scxwin/enable", "0", 0);
  rmdir(inst);
  if (probes) put(tracefs, "kprobe_events", "-:scxwin/tick\n-:scxwin/bal\n-:scxwin/consumed\n-:scxwin/put\n-:scxwin/insert\n", 1);
  return 0;
}
