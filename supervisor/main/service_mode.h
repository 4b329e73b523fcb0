/*
 * service_mode.h: the supervisor's start when systemd starts it as its
 * own user and holds the helpers' sockets (service_mode.c).
 */
#ifndef BERTH_SERVICE_MODE_H
#define BERTH_SERVICE_MODE_H

/*
 * Connect to berth-mounter's and berth-registry's sockets in run_dir
 * (systemd starts each as we connect) and check that we hold no
 * capability; the two descriptors, or exit.
 */
void service_mode_start(const char *run_dir, int *mounter_fd,
    int *registry_fd);

#endif
