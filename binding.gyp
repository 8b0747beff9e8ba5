{
  "targets": [
    {
      "target_name": "opencode_pty",
      "sources": [
        "native/addon/addon.cc", "native/addon/args.cc", "native/addon/close-pool.cc", "native/addon/errors.cc", "native/addon/fd-flags.cc",
        "native/addon/fd-passing.cc", "native/addon/fd-stat.cc", "native/addon/peer.cc", "native/addon/received-close.cc", "native/addon/sockets.cc", "native/addon/watch.cc"
      ],
      "include_dirs": ["<!(node -p \"require('node-addon-api').include_dir\")"],
      "defines": ["NAPI_VERSION=8", "NAPI_DISABLE_CPP_EXCEPTIONS", "OPENCODE_PTY_SEPARATE_SOURCES"],
      "cflags_cc": ["-std=c++17", "-Wall", "-Wextra"]
    },
    {
      "target_name": "opencode-pty-session",
      "type": "executable",
      "sources": [
        "native/session/main.c", "native/session/relay.c", "native/session/decode.c",
        "native/session/control.c", "native/session/cgroup.c", "native/session/figures.c",
        "native/session/end-input.c"
      ],
      "cflags": ["-std=c11", "-Wall", "-Wextra", "-O2", "-D_GNU_SOURCE"],
      "libraries": ["-lutil"]
    }
  ]
}
