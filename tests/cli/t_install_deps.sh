# scripts/install-deps.sh around apt-get, with stand-ins for apt-get, dpkg and dpkg-query on
# PATH (nothing is installed): maintainer scripts get a stdout they can write to, apt's status
# lines reach the progress printer, and a failing install shows the log's last lines.

# fake_apt DIR EXIT: stand-ins in DIR. apt-get writes its status lines to the descriptor that
# -o APT::Status-Fd names, then, as dpkg runs a postinst, writes and flushes its stdout (the
# step texlive-base's postinst failed at when the status went to fd 1) and exits with EXIT;
# dpkg-query reports a package installed once apt-get has run.
fake_apt() {
  local dir=$1 code=$2
  mkdir -p "$dir"
  cat >"$dir/apt-get" <<EOF
#!/usr/bin/env bash
fd=
for a in "\$@"; do case "\$a" in APT::Status-Fd=*) fd=\${a#*=} ;; esac; done
[ -n "\$fd" ] || { echo "no APT::Status-Fd" >&2; exit 100; }
[ "\$fd" != 1 ] || { echo "status on stdout" >&2; exit 100; }
case " \$* " in *" install "*) ;; *) exit 0 ;; esac
echo "pmstatus:demo:50.0:Configuring demo (amd64)" >&\$fd
python3 -c 'import sys; print("postinst of demo: done"); sys.stdout.flush()' || exit 101
touch "$dir/installed"
exit $code
EOF
  cat >"$dir/dpkg-query" <<EOF
#!/usr/bin/env bash
[ -e "$dir/installed" ] && echo "ii  demo-pkg"
exit 0
EOF
  printf '#!/bin/sh\necho amd64\n' >"$dir/dpkg"
  printf '#!/bin/sh\necho 0\n' >"$dir/id"
  chmod +x "$dir"/*
}

# run_deps DIR: install-deps.sh with the stand-ins first on PATH and a one-package set.
run_deps() {
  PATH="$1:$PATH" TMPDIR="$WORK" bash -c \
    'source <(sed "s/^host_pkgs=(/host_pkgs=(demo-pkg) ; unused_pkgs=(/" scripts/install-deps.sh)' \
    install-deps.sh
}

test_install_deps_gives_maintainer_scripts_a_stdout_and_shows_progress() {
  fake_apt "$WORK/bin" 0
  expect_exit 0 run_deps "$WORK/bin"
  expect_text err "install-deps: install: installing 50 % (Configuring demo (amd64))"
  expect_text err "install-deps: done: demo-pkg installed"
  # the log is removed on success; the postinst's line went to it, not to the terminal
  if grep -q "postinst of demo" "$WORK/out" "$WORK/err"; then
    echo "    the postinst's stdout reached the terminal" >&2; return 1
  fi
  [ -z "$(ls "$WORK"/longmix-install-deps.*.log 2>/dev/null)" ]
}

test_install_deps_failure_keeps_the_log_with_the_scripts_output() {
  fake_apt "$WORK/bin" 100
  expect_exit 1 run_deps "$WORK/bin"
  expect_text err "FAILED: apt-get install"
  expect_text err "| postinst of demo: done"
  grep -q "postinst of demo: done" "$WORK"/longmix-install-deps.*.log
}
