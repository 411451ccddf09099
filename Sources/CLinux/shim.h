#ifndef DATAINGEST_CLINUX_SHIM_H
#define DATAINGEST_CLINUX_SHIM_H
// Linux kernel interfaces the Glibc Swift module does not expose: the HTTP
// server's event loop uses epoll, eventfd (worker wakeups) and accept4; the
// segment store asks statfs for the file system's type.
// No _GNU_SOURCE here: it would change fd_set and clash with Glibc's module;
// accept4 is declared below instead.
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/vfs.h>
#include <signal.h>
#include <pthread.h>

/// The epoll event flags as plain integers (Swift imports them as an enum).
static inline unsigned int dataingest_epollin(void) { return EPOLLIN; }
static inline unsigned int dataingest_epollout(void) { return EPOLLOUT; }
static inline unsigned int dataingest_epollerr(void) { return EPOLLERR; }
static inline unsigned int dataingest_epollhup(void) { return EPOLLHUP; }
static inline unsigned int dataingest_epollrdhup(void) { return EPOLLRDHUP; }

/// Installs `handler` for `signo` with SA_RESTART, so that the signal only
/// wakes the event loop through its self-pipe and never fails a syscall.
static inline int dataingest_install_signal_handler(int signo, void (*handler)(int)) {
    struct sigaction action;
    sigemptyset(&action.sa_mask);
    action.sa_flags = SA_RESTART;
    action.sa_handler = handler;
    if (sigaction(signo, &action, 0) != 0) return -1;
    // A parent (e.g. a test runner) may have left the signal blocked in the
    // mask this process inherited; unblock it for the calling thread, whose
    // mask threads created later inherit.
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, signo);
    return pthread_sigmask(SIG_UNBLOCK, &set, 0);
}
extern int accept4(int fd, struct sockaddr *addr, socklen_t *addrlen, int flags);
extern int pipe2(int pipefd[2], int flags);

/// accept4 without the peer address (glibc's _GNU_SOURCE transparent union
/// for the address argument does not import into Swift).
static inline int dataingest_accept4(int fd, int flags) {
    return accept4(fd, 0, 0, flags);
}

/// The type (`f_type` of statfs(2), a magic number such as EXT4_SUPER_MAGIC)
/// of the file system holding `path`, or -1 with errno set.
static inline long dataingest_filesystem_type(const char *path) {
    struct statfs info;
    if (statfs(path, &info) != 0) return -1;
    return (long)info.f_type;
}
#endif
