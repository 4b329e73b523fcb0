/*
 * notify.h: telling the service manager how a berth process is doing,
 * with systemd's notification protocol (READY=1, STATUS=, WATCHDOG=1,
 * STOPPING=1).
 *
 * notify_init() connects once to $NOTIFY_SOCKET, before any sandbox: the
 * mounter's seccomp allow-list has no socket(2) and its environment is
 * cleared, so libsystemd's sd_notify(), which opens a socket per call and
 * reads the environment each time, cannot run there. Every call is a no-op
 * when no service manager listens (spawn mode, a shell, the tests).
 */
#ifndef BERTH_NOTIFY_H
#define BERTH_NOTIFY_H

#include <stdint.h>

#include <event2/event.h>

#include "log.h"

/*
 * Read and unset NOTIFY_SOCKET, WATCHDOG_USEC and WATCHDOG_PID (children
 * must not notify in our name). 0, or -errno when $NOTIFY_SOCKET is set
 * but cannot be reached; the caller logs it and goes on.
 */
int notify_init(void);
/* "READY=1" with a status line an operator reads in systemctl status. */
void notify_ready(const char *fmt, ...) BERTH_PRINTF(1, 2);
void notify_status(const char *fmt, ...) BERTH_PRINTF(1, 2);
void notify_stopping(const char *fmt, ...) BERTH_PRINTF(1, 2);
/*
 * When the manager set a watchdog, send WATCHDOG=1 from base's loop every
 * half interval: a loop that hangs stops the pings and gets us restarted.
 * 0 (also when there is no watchdog) or -ENOMEM.
 */
int notify_watchdog_start(struct event_base *base);
/* The interval the manager asked for, in microseconds; 0: none. */
uint64_t notify_watchdog_usec(void);
void notify_free(void);

#endif
