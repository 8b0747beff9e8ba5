{
  "targets": [
    {
      "target_name": "opencode_pty",
      "sources": [
        "native/addon/addon.cc", "native/addon/args.cc", "native/addon/close-pool.cc", "native/addon/dumpable.cc", "native/addon/errors.cc", "native/addon/fd-flags.cc",
        "native/addon/fd-passing.cc", "native/addon/fd-stat.cc", "native/addon/peer.cc", "native/addon/received-close.cc", "native/addon/sockets.cc", "native/addon/watch.cc"
      ],
      "include_dirs": ["<!(node -p \"require('node-addon-api').include_dir\")"],
      "defines": ["NAPI_VERSION=8", "NAPI_DISABLE_CPP_EXCEPTIONS", "OPENCODE_PTY_SEPARATE_SOURCES"],
      "cflags_cc": ["-std=c++17", "-Wall", "-Wextra"]
    }
  ]
}
