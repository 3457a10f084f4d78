#!/bin/sh
# Register Engram Studio with the desktop for this user: launcher, icons, the
# .engram MIME type. Run from an unpacked bundle (./install-desktop.sh) or a
# checkout (packaging/install-desktop.sh); ENGRAM_BIN overrides the command.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
share=${XDG_DATA_HOME:-$HOME/.local/share}
if [ -d "$here/share" ]; then src="$here/share"; else src="$here"; fi
bin=${ENGRAM_BIN:-$( [ -x "$here/engram" ] && echo "$here/engram" || echo engram )}
case $bin in
  *[\"\`\$\\\|\&%]*) echo "install-desktop.sh: cannot write a launcher for $bin (it holds one of: \" \` \$ \\ | & %)" >&2; exit 1 ;;
  *" "*) exec_bin="\"$bin\"" ;;  # the desktop entry spec quotes an argument with spaces
  *) exec_bin=$bin ;;
esac
mkdir -p "$share/applications" "$share/mime/packages"
sed "s|^Exec=engram|Exec=$exec_bin|; s|^TryExec=engram|TryExec=$bin|" \
  "$src/engram-studio.desktop" > "$share/applications/engram-studio.desktop"
cp "$src/engram-studio-mime.xml" "$share/mime/packages/engram-studio.xml"
icons=$( [ -d "$src/icons" ] && echo "$src/icons" || echo "$here/../resources/icons" )
for png in "$icons"/engram-studio-*.png; do
  size=$(basename "$png" .png | sed 's/engram-studio-//')
  mkdir -p "$share/icons/hicolor/${size}x${size}/apps"
  cp "$png" "$share/icons/hicolor/${size}x${size}/apps/engram-studio.png"
done
mkdir -p "$share/icons/hicolor/scalable/apps"
cp "$icons/engram-studio.svg" "$share/icons/hicolor/scalable/apps/engram-studio.svg"
command -v update-mime-database >/dev/null && update-mime-database "$share/mime" || true
command -v update-desktop-database >/dev/null && update-desktop-database "$share/applications" || true
echo "installed the launcher, icons and the .engram type under $share"
