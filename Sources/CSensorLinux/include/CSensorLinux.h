// Linux calls Glibc's Swift overlay does not import, because they need _GNU_SOURCE
// (accept4, struct ucred, pthread_setname_np) or a header it leaves out (malloc.h, sys/eventfd.h). Each is one small prefixed
// function, nothing more.
#ifndef CSENSORLINUX_H
#define CSENSORLINUX_H
#include <sys/types.h>

/// accept4(fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC); -1 and errno on failure.
int csl_accept_nonblocking(int fd);

/// getsockopt(fd, SOL_SOCKET, SO_PEERCRED): the peer's pid, uid, gid; -1 and errno on failure.
int csl_peer_credentials(int fd, pid_t *pid, uid_t *uid, gid_t *gid);

/// mallopt(M_MMAP_THRESHOLD, mmap) and mallopt(M_TRIM_THRESHOLD, trim): 1 when both took.
int csl_malloc_thresholds(int mmap_threshold, int trim_threshold);

/// adjtimex with no modes (a read, allowed unprivileged): the clock state it returns (TIME_OK,
/// …, TIME_ERROR) with the status bits in *status; -1 and errno on failure.
int csl_clock_state(int *status);

/// The STA_UNSYNC status bit and the TIME_ERROR state of <sys/timex.h>.
int csl_status_unsync(void);
int csl_time_error(void);

/// eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK): a counter one thread writes to wake another's poll;
/// -1 and errno on failure.
int csl_wake_counter(void);

/// pthread_setname_np(pthread_self(), name), the name cut to the kernel's 15 bytes: what `ps -L`,
/// /proc/PID/task/*/comm and the journal show for the calling thread. 0, or the error number.
int csl_name_this_thread(const char *name);

#endif
