// The tests' stand-in for the one thing Debian 12's compositors cannot do without a DRM device:
// power an output off. wlroots 0.15 refuses to disable a headless or nested output, so sway's
// `dpms off` never reaches a client there (docs/wayland.md §7). This is a Wayland server on
// Debian's libwayland-server with the same protocol XML the watcher's glue comes from: one
// wl_output (version 4, named STANDIN-1), zwlr_output_power_manager_v1 and an empty
// zwlr_foreign_toplevel_manager_v1. It prints its socket name, then obeys stdin, a word a line:
//   off | on   the output's mode, sent to every power object (as a compositor does after a commit)
//   fail       every power object gets `failed` (another client took control)
//   remove     the output's global goes away
//   quit       ends the server
// A client's set_mode is obeyed too. Everything else is refused by libwayland-server itself.
// With --without-toplevels it offers no zwlr_foreign_toplevel_manager_v1, as GNOME's and KDE's
// compositors do not.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <wayland-server.h>

#include "wlr-foreign-toplevel-management-unstable-v1-server-protocol.h"
#include "wlr-output-power-management-unstable-v1-server-protocol.h"

static struct wl_display *display;
static struct wl_global *output_global;
static struct wl_list outputs;  // wl_output resources
static struct wl_list powers;   // zwlr_output_power_v1 resources
static uint32_t mode = ZWLR_OUTPUT_POWER_V1_MODE_ON;

static void unlink_resource(struct wl_resource *resource) { wl_list_remove(wl_resource_get_link(resource)); }

static void destroy_request(struct wl_client *client, struct wl_resource *resource) {
    (void)client;
    wl_resource_destroy(resource);
}

static void broadcast_mode(void) {
    struct wl_resource *power;
    wl_resource_for_each(power, &powers) { zwlr_output_power_v1_send_mode(power, mode); }
}

static const struct wl_output_interface output_requests = {.release = destroy_request};

static void bind_output(struct wl_client *client, void *data, uint32_t version, uint32_t id) {
    (void)data;
    struct wl_resource *resource = wl_resource_create(client, &wl_output_interface, (int)version, id);
    if (resource == NULL) {
        wl_client_post_no_memory(client);
        return;
    }
    wl_resource_set_implementation(resource, &output_requests, NULL, unlink_resource);
    wl_list_insert(&outputs, wl_resource_get_link(resource));
    wl_output_send_geometry(resource, 0, 0, 0, 0, WL_OUTPUT_SUBPIXEL_UNKNOWN, "stand-in", "stand-in", WL_OUTPUT_TRANSFORM_NORMAL);
    wl_output_send_mode(resource, WL_OUTPUT_MODE_CURRENT, 640, 480, 60000);
    if (version >= WL_OUTPUT_NAME_SINCE_VERSION) wl_output_send_name(resource, "STANDIN-1");
    if (version >= WL_OUTPUT_DONE_SINCE_VERSION) wl_output_send_done(resource);
}

static void set_mode(struct wl_client *client, struct wl_resource *resource, uint32_t requested) {
    (void)client;
    if (requested > ZWLR_OUTPUT_POWER_V1_MODE_ON) {
        wl_resource_post_error(resource, ZWLR_OUTPUT_POWER_V1_ERROR_INVALID_MODE, "no such mode");
        return;
    }
    mode = requested;
    broadcast_mode();
}

static const struct zwlr_output_power_v1_interface power_requests = {.set_mode = set_mode, .destroy = destroy_request};

static void get_output_power(struct wl_client *client, struct wl_resource *manager, uint32_t id, struct wl_resource *output) {
    (void)output;
    struct wl_resource *resource = wl_resource_create(client, &zwlr_output_power_v1_interface, wl_resource_get_version(manager), id);
    if (resource == NULL) {
        wl_client_post_no_memory(client);
        return;
    }
    wl_resource_set_implementation(resource, &power_requests, NULL, unlink_resource);
    wl_list_insert(&powers, wl_resource_get_link(resource));
    zwlr_output_power_v1_send_mode(resource, mode);
}

static const struct zwlr_output_power_manager_v1_interface power_manager_requests = {
    .get_output_power = get_output_power, .destroy = destroy_request};

static void bind_power_manager(struct wl_client *client, void *data, uint32_t version, uint32_t id) {
    (void)data;
    struct wl_resource *resource = wl_resource_create(client, &zwlr_output_power_manager_v1_interface, (int)version, id);
    if (resource == NULL) {
        wl_client_post_no_memory(client);
        return;
    }
    wl_resource_set_implementation(resource, &power_manager_requests, NULL, NULL);
}

static void stop_toplevels(struct wl_client *client, struct wl_resource *resource) {
    (void)client;
    zwlr_foreign_toplevel_manager_v1_send_finished(resource);
    wl_resource_destroy(resource);
}

static const struct zwlr_foreign_toplevel_manager_v1_interface toplevel_manager_requests = {.stop = stop_toplevels};

static void bind_toplevel_manager(struct wl_client *client, void *data, uint32_t version, uint32_t id) {
    (void)data;
    struct wl_resource *resource = wl_resource_create(client, &zwlr_foreign_toplevel_manager_v1_interface, (int)version, id);
    if (resource == NULL) {
        wl_client_post_no_memory(client);
        return;
    }
    wl_resource_set_implementation(resource, &toplevel_manager_requests, NULL, NULL);
}

static void obey(const char *word) {
    if (strcmp(word, "off") == 0 || strcmp(word, "on") == 0) {
        mode = strcmp(word, "on") == 0 ? ZWLR_OUTPUT_POWER_V1_MODE_ON : ZWLR_OUTPUT_POWER_V1_MODE_OFF;
        broadcast_mode();
    } else if (strcmp(word, "fail") == 0) {
        struct wl_resource *power, *next;
        wl_resource_for_each_safe(power, next, &powers) {
            zwlr_output_power_v1_send_failed(power);
            unlink_resource(power);
            wl_list_init(wl_resource_get_link(power));
        }
    } else if (strcmp(word, "remove") == 0 && output_global != NULL) {
        wl_global_destroy(output_global);
        output_global = NULL;
    } else if (strcmp(word, "quit") == 0) {
        wl_display_terminate(display);
    }
    wl_display_flush_clients(display);
}

static int on_stdin(int fd, uint32_t mask, void *data) {
    (void)mask;
    (void)data;
    static char line[64];
    static size_t used;
    ssize_t count = read(fd, line + used, sizeof line - 1 - used);
    if (count <= 0) {
        wl_display_terminate(display);
        return 0;
    }
    used += (size_t)count;
    char *end;
    while ((end = memchr(line, '\n', used)) != NULL) {
        *end = '\0';
        obey(line);
        used -= (size_t)(end + 1 - line);
        memmove(line, end + 1, used);
    }
    if (used == sizeof line - 1) used = 0;  // an overlong line is dropped
    return 0;
}

int main(int argc, char **argv) {
    int toplevels = !(argc > 1 && strcmp(argv[1], "--without-toplevels") == 0);
    wl_list_init(&outputs);
    wl_list_init(&powers);
    display = wl_display_create();
    const char *socket = display ? wl_display_add_socket_auto(display) : NULL;
    if (socket == NULL) {
        fprintf(stderr, "output-power-compositor: cannot create a Wayland socket (is XDG_RUNTIME_DIR set?)\n");
        return 1;
    }
    output_global = wl_global_create(display, &wl_output_interface, 4, NULL, bind_output);
    wl_global_create(display, &zwlr_output_power_manager_v1_interface, 1, NULL, bind_power_manager);
    if (toplevels) wl_global_create(display, &zwlr_foreign_toplevel_manager_v1_interface, 3, NULL, bind_toplevel_manager);
    wl_event_loop_add_fd(wl_display_get_event_loop(display), STDIN_FILENO, WL_EVENT_READABLE, on_stdin, NULL);
    printf("%s\n", socket);
    fflush(stdout);
    wl_display_run(display);
    wl_display_destroy_clients(display);
    wl_display_destroy(display);
    return 0;
}
