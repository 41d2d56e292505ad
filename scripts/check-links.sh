#!/usr/bin/env bash
# Checks every relative link of the repository's Markdown files: [text](target) must name an
# existing file or folder (relative to the file that links it), and a #anchor must name a heading
# of its target (GitHub's rule: lower case, punctuation dropped, spaces as hyphens, -1, -2 for
# repeats). External links (http:, https:, mailto:) and fenced code blocks are skipped.
# Prints FILE:LINE: broken link TARGET for each one and exits 1 if there is any; 0 otherwise.
# Usage: scripts/check-links.sh [FILE.md...]   (default: every .md file outside build folders)
set -euo pipefail
cd "$(dirname "$0")/.."
export LC_ALL=C

if [ "$#" -gt 0 ]; then
    files=("$@")
else
    mapfile -t files < <(find . -name '*.md' -not -path './build*' -not -path './.git/*' \
                              -not -path '*/node_modules/*' | sed 's|^\./||' | sort)
fi

# the anchors of a Markdown file's headings, one a line
anchors() {
    awk '
        /^(```|~~~)/ { fenced = !fenced; next }
        fenced { next }
        /^#+[ \t]/ {
            h = $0
            sub(/^#+[ \t]+/, "", h); sub(/[ \t]+#*[ \t]*$/, "", h)
            h = tolower(h)
            gsub(/[][!"#$%&'\''()*+,.\/:;<=>?@\\^`{|}~]/, "", h)
            # the non-ASCII punctuation and symbols of these files (UTF-8): — – − × → · ≥ ≤
            n = split("\342\200\224 \342\200\223 \342\210\222 \303\227 \342\206\222 \302\267 \342\211\245 \342\211\244", sym, " ")
            for (i = 1; i <= n; i++) gsub(sym[i], "", h)
            gsub(/ /, "-", h)
            k = seen[h]++
            print (k ? h "-" k : h)
        }' "$1"
}

# FILE LINE TARGET for every link outside fenced code blocks and inline code spans
links() {
    awk '
        /^(```|~~~)/ { fenced = !fenced; next }
        fenced { next }
        {
            line = $0
            gsub(/`[^`]*`/, "", line)
            while (match(line, /\]\([^)]*\)/)) {
                t = substr(line, RSTART + 2, RLENGTH - 3)
                sub(/[ \t].*$/, "", t); sub(/^</, "", t); sub(/>$/, "", t)
                print FILENAME "\t" FNR "\t" t
                line = substr(line, RSTART + RLENGTH)
            }
        }' "$1"
}

broken=0
for f in "${files[@]}"; do
    dir=$(dirname "$f")
    while IFS=$'\t' read -r file line target; do
        case "$target" in
            http:* | https:* | mailto:* | "") continue ;;
        esac
        path=${target%%#*}
        anchor=""
        [[ "$target" == *"#"* ]] && anchor=${target#*#}
        if [ -z "$path" ]; then
            resolved=$f
        else
            resolved="$dir/$path"
        fi
        if [ ! -e "$resolved" ]; then
            echo "$file:$line: broken link $target (no $resolved)"
            broken=1
            continue
        fi
        if [ -n "$anchor" ] && [[ "$resolved" == *.md ]] && [ -f "$resolved" ]; then
            if ! anchors "$resolved" | grep -qxF -- "$anchor"; then
                echo "$file:$line: broken link $target (no heading #$anchor in $resolved)"
                broken=1
            fi
        fi
    done < <(links "$f")
done
if [ "$broken" -ne 0 ]; then
    echo "check-links: broken links found" >&2
    exit 1
fi
echo "check-links: ${#files[@]} files, every relative link resolves"
