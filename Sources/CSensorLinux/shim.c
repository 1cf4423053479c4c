#define _GNU_SOURCE
#include <malloc.h>
#include <pthread.h>
#include <stddef.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <sys/timex.h>
#include "CSensorLinux.h"

int csl_accept_nonblocking(int fd) {
    return accept4(fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
}

int csl_peer_credentials(int fd, pid_t *pid, uid_t *uid, gid_t *gid) {
    struct ucred credentials;
    socklen_t length = sizeof credentials;
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &credentials, &length) != 0) return -1;
    *pid = credentials.pid;
    *uid = credentials.uid;
    *gid = credentials.gid;
    return 0;
}

int csl_malloc_thresholds(int mmap_threshold, int trim_threshold) {
    return mallopt(M_MMAP_THRESHOLD, mmap_threshold) == 1 && mallopt(M_TRIM_THRESHOLD, trim_threshold) == 1;
}

int csl_clock_state(int *status) {
    struct timex state = {0};
    int result = adjtimex(&state);
    if (result != -1) *status = state.status;
    return result;
}

int csl_status_unsync(void) { return STA_UNSYNC; }

int csl_time_error(void) { return TIME_ERROR; }

int csl_wake_counter(void) {
    return eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
}

int csl_alarm_timer(void) {
    return timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
}

int csl_set_alarm(int fd, uint64_t deadline) {
    struct itimerspec setting = {0};
    setting.it_value.tv_sec = (time_t)(deadline / 1000000000u);
    setting.it_value.tv_nsec = (long)(deadline % 1000000000u);
    return timerfd_settime(fd, TFD_TIMER_ABSTIME, &setting, NULL);
}

int csl_name_this_thread(const char *name) {
    char cut[16];
    strncpy(cut, name, sizeof cut - 1);
    cut[sizeof cut - 1] = 0;
    return pthread_setname_np(pthread_self(), cut);
}

int csl_epoll_create(void) { return epoll_create1(EPOLL_CLOEXEC); }

int csl_epoll_watch(int ep, int fd, int add, int readable, int writable, uint64_t key) {
    struct epoll_event event = {0};
    event.events = EPOLLONESHOT | (readable ? EPOLLIN | EPOLLRDHUP : 0) | (writable ? EPOLLOUT : 0);
    event.data.u64 = key;
    return epoll_ctl(ep, add ? EPOLL_CTL_ADD : EPOLL_CTL_MOD, fd, &event);
}

int csl_epoll_forget(int ep, int fd) {
    struct epoll_event unused = {0};
    return epoll_ctl(ep, EPOLL_CTL_DEL, fd, &unused);
}

int csl_epoll_wait(int ep, uint64_t *keys, uint8_t *readable, uint8_t *writable, int max) {
    struct epoll_event events[64];
    if (max > 64) max = 64;
    int n = epoll_wait(ep, events, max, -1);
    for (int i = 0; i < n; i++) {
        uint32_t e = events[i].events;
        keys[i] = events[i].data.u64;
        readable[i] = (e & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)) != 0;
        writable[i] = (e & (EPOLLOUT | EPOLLHUP | EPOLLERR)) != 0;
    }
    return n;
}

void csl_store_release_i64(int64_t *p, int64_t value) {
    __atomic_store_n(p, value, __ATOMIC_RELEASE);
}
