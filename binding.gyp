{
  "targets": [
    {
      "target_name": "opencode_pty",
      "sources": [
        "native/addon.cc", "native/args.cc", "native/close-pool.cc", "native/errors.cc", "native/fd-flags.cc",
        "native/fd-passing.cc", "native/fd-stat.cc", "native/peer.cc", "native/received-close.cc", "native/sockets.cc", "native/watch.cc"
      ],
      "include_dirs": ["<!(node -p \"require('node-addon-api').include_dir\")"],
      "defines": ["NAPI_VERSION=8", "NAPI_DISABLE_CPP_EXCEPTIONS", "OPENCODE_PTY_SEPARATE_SOURCES"],
      "cflags_cc": ["-std=c++17", "-Wall", "-Wextra"]
    }
  ]
}
