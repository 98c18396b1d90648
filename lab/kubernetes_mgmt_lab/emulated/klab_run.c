/*
 * klab-run: an emulated command of a lab host, run by the host's agent.
 *
 *     klab-run NAME MODULE [ARG...]
 *
 * The wrappers in a lab host's /usr/local/bin exec this. It connects to
 * the host's command agent (agent.py), hands over its standard streams
 * and umask, passes on the signals it gets, and ends the way the
 * stand-in ended (exit status or signal). The agent reads the command
 * line, environment, identity and working directory of this process
 * from the kernel. Without an agent, or when the agent refuses the
 * request, it execs "standin" beside itself with the same arguments:
 * the stand-in started from scratch.
 *
 * Written in C because this is the part that runs per command: the lab
 * runs hundreds of them on two cores, and an interpreter's start-up is
 * what the agent exists to save.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#define DEFAULT_SOCKET "/run/klab-agent.sock"
#define LOST 255

static int agent = -1;

static void forward(int sig)
{
    unsigned char byte = (unsigned char)sig;
    int saved = errno;

    (void)send(agent, &byte, 1, MSG_NOSIGNAL);
    errno = saved;
}

static void fallback(char **argv)
{
    char path[4096];
    ssize_t n = readlink("/proc/self/exe", path, sizeof path - 16);
    char *slash;

    if (n > 0) {
        path[n] = '\0';
        slash = strrchr(path, '/');
        if (slash != NULL) {
            strcpy(slash + 1, "standin");
            argv[0] = path;
            execv(path, argv);
        }
    }
    fprintf(stderr, "klab-run: %s: no agent, and no standin: %s\n",
            argv[1], strerror(errno));
    exit(127);
}

/* A closed standard stream cannot be handed over: /dev/null stands in. */
static void open_std_streams(void)
{
    for (int fd = 0; fd < 3; fd++)
        if (fcntl(fd, F_GETFD) < 0 && open("/dev/null", O_RDWR) != fd)
            exit(126);
}

static int connect_agent(void)
{
    const char *path = getenv("KLAB_AGENT_SOCKET");
    struct sockaddr_un addr = { .sun_family = AF_UNIX };
    int fd;

    if (path == NULL || *path == '\0')
        path = DEFAULT_SOCKET;
    if (strlen(path) >= sizeof addr.sun_path)
        return -1;
    strcpy(addr.sun_path, path);
    fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    if (connect(fd, (struct sockaddr *)&addr, sizeof addr) < 0) {
        close(fd);
        return -1;
    }
    return fd;
}

/* The request: the umask as octal text, with fds 0, 1 and 2 attached. */
static int send_request(int fd)
{
    int fds[3] = { 0, 1, 2 };
    char text[16];
    char control[CMSG_SPACE(sizeof fds)];
    mode_t mask = umask(0);
    struct iovec iov;
    struct msghdr msg = { 0 };
    struct cmsghdr *cmsg;
    int len;

    umask(mask);
    len = snprintf(text, sizeof text, "%04o\n", (unsigned)mask);
    iov.iov_base = text;
    iov.iov_len = (size_t)len;
    memset(control, 0, sizeof control);
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control;
    msg.msg_controllen = sizeof control;
    cmsg = CMSG_FIRSTHDR(&msg);
    cmsg->cmsg_level = SOL_SOCKET;
    cmsg->cmsg_type = SCM_RIGHTS;
    cmsg->cmsg_len = CMSG_LEN(sizeof fds);
    memcpy(CMSG_DATA(cmsg), fds, sizeof fds);
    return sendmsg(fd, &msg, MSG_NOSIGNAL) == len ? 0 : -1;
}

static void forward_signals(void)
{
    static const int signals[] = { SIGHUP, SIGINT, SIGQUIT, SIGTERM,
                                   SIGUSR1, SIGUSR2 };
    struct sigaction action = { .sa_handler = forward,
                                .sa_flags = SA_RESTART };

    sigemptyset(&action.sa_mask);
    for (size_t i = 0; i < sizeof signals / sizeof signals[0]; i++)
        sigaction(signals[i], &action, NULL);
}

/* "exit N\n" or "signal N\n"; "refused\n" (a request the agent could
 * not take): the stand-in starts without it; nothing (the agent died):
 * LOST. */
static int await_end(char **argv)
{
    char reply[64];
    size_t got = 0;
    ssize_t n;
    int value;
    sigset_t set;

    while (got < sizeof reply - 1 && memchr(reply, '\n', got) == NULL) {
        n = read(agent, reply + got, sizeof reply - 1 - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        got += (size_t)n;
    }
    reply[got] = '\0';
    if (strcmp(reply, "refused\n") == 0) {
        close(agent);
        fallback(argv);
    }
    if (sscanf(reply, "exit %d", &value) == 1)
        return value;
    if (sscanf(reply, "signal %d", &value) == 1 && value > 0 && value < 65) {
        signal(value, SIG_DFL);
        sigemptyset(&set);
        sigaddset(&set, value);
        sigprocmask(SIG_UNBLOCK, &set, NULL);
        raise(value);
        return 128 + value;
    }
    fprintf(stderr, "klab-run: %s: the lab host's command agent ended "
            "before the command did\n", argv[1]);
    return LOST;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: klab-run NAME MODULE [ARG...]\n");
        return 2;
    }
    open_std_streams();
    agent = connect_agent();
    if (agent < 0 || send_request(agent) < 0)
        fallback(argv);
    forward_signals();
    return await_end(argv);
}
