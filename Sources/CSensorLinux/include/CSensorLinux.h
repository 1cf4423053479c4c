// Linux calls Glibc's Swift overlay does not import, because they need _GNU_SOURCE
// (accept4, struct ucred, pthread_setname_np) or a header it leaves out (malloc.h, sys/eventfd.h, sys/timerfd.h). Each is one small prefixed
// function, nothing more.
#ifndef CSENSORLINUX_H
#define CSENSORLINUX_H
#include <stdint.h>
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

/// timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK): a one-shot alarm any thread may
/// set, readable once it has rung; -1 and errno on failure.
int csl_alarm_timer(void);

/// timerfd_settime(fd, TFD_TIMER_ABSTIME) to CLOCK_MONOTONIC `deadline` ns, one-shot (no
/// interval): a deadline already past rings at once, 0 disarms. 0, or -1 and errno.
int csl_set_alarm(int fd, uint64_t deadline);

/// pthread_setname_np(pthread_self(), name), the name cut to the kernel's 15 bytes: what `ps -L`,
/// /proc/PID/task/*/comm and the journal show for the calling thread. 0, or the error number.
int csl_name_this_thread(const char *name);

/// epoll_create1(EPOLL_CLOEXEC); -1 and errno on failure.
int csl_epoll_create(void);

/// Watches `fd` once (EPOLLONESHOT) for reading (EPOLLIN | EPOLLRDHUP) and/or writing (EPOLLOUT),
/// reported with `key`: EPOLL_CTL_ADD when `add`, else EPOLL_CTL_MOD. The event struct is packed
/// on x86-64, so it is built here. -1 and errno on failure.
int csl_epoll_watch(int ep, int fd, int add, int readable, int writable, uint64_t key);

/// EPOLL_CTL_DEL of `fd`; -1 and errno on failure.
int csl_epoll_forget(int ep, int fd);

/// epoll_wait(ep, …, max, -1) into parallel arrays: each event's key, and whether a read
/// (readable, hang-up, error) or a write (writable, hang-up, error) would now not block. The
/// number of events, or -1 and errno.
int csl_epoll_wait(int ep, uint64_t *keys, uint8_t *readable, uint8_t *writable, int max);

/// *p = value with release ordering: every store before it reaches memory first. For a count
/// published in a shared file mapping after the data it counts, so a process killed between
/// the two leaves the old count (a replay then reads only whole samples).
void csl_store_release_i64(int64_t *p, int64_t value);

#endif
