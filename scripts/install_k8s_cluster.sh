#!/usr/bin/env bash
# install_k8s_cluster.sh - make an Ubuntu VM a Kubernetes node with kubeadm.
#
# Usage: install_k8s_cluster.sh ROLE CONFIG
#        install_k8s_cluster.sh --contract-version   (prints CONTRACT_VERSION)
#   ROLE    prepare | lb | init | join-master | join-worker | refresh-join |
#           hosts | storage | status | reset | upgrade
#   CONFIG  file of KEY=VALUE lines ("-": stdin). Blank lines and "#"
#           comments are allowed. Nothing is evaluated: every value must
#           match a strict pattern, unknown keys and keys another role uses
#           are errors; an empty value counts as not given.
#
# Keys (* = required; the definition is the "contract tables" below, rendered
# from the plugin's kubernetes_mgmt/cluster/contract.py). Every role:
# NODE_NAME*, NODE_IP*, DEADLINE (seconds for every wait, default 600).
#   prepare      K8S_VERSION* (minor, e.g. 1.37), K8S_APT_KEY_FINGERPRINTS*
#                (FPR,...: the apt key must be one of these keys, else
#                nothing is installed), K8S_APT_REPO, K8S_APT_KEY_URL,
#                HTTP_PROXY, HTTPS_PROXY, NO_PROXY, REGISTRY_MIRRORS
#                (registry=url,..., in the order tried), REGISTRY_CA,
#                REGISTRY_CLIENT_CERT, REGISTRY_CLIENT_KEY, REGISTRY_AUTH
#                (registry=<base64>,...: PEM, PEM, PEM key, Authorization
#                header value), REGISTRY_SKIP_VERIFY (registry,...): when
#                the sandbox image's registry is among them, the image is
#                pulled through them (ctr) at the end; HOSTS (ip=name,...
#                of all nodes), IMAGE_BUNDLE (directory of the uploaded
#                image bundle: bundle.list and OCI archives, imported into
#                containerd with their digests checked), K8S_PATCH (X.Y.Z:
#                install exactly this version, the bundle's),
#                NFS_CLIENT (1: install the NFS client for NFS volumes),
#                IMAGE_REPOSITORY (of containerd's sandbox image; default
#                registry.k8s.io; the tag is the pause tag kubeadm lists
#                for its own version)
#   lb           LB_BACKENDS* (name=ip,... of every master), VIP*, VIP_PREFIX*,
#                VRRP_ROUTER_ID*, VRRP_PRIORITY*, VRRP_STATE*, VRRP_PASSWORD*,
#                VRRP_PEERS* (the other masters' IPs), LB_PORT (16443)
#   init         K8S_VERSION*, CONTROL_PLANE_ENDPOINT* (host:port), POD_CIDR*,
#                SERVICE_CIDR*, BOOTSTRAP_TOKEN*, CNI* (calico|flannel),
#                CNI_MANIFEST* (URL or absolute path), CNI_SHA256* (of the
#                manifest: another content is never applied), CERTIFICATE_KEY (then
#                the certificates are uploaded for master joins),
#                IMAGE_REPOSITORY, API_CERT_SANS (ip-or-name,...),
#                HTTP_PROXY, HTTPS_PROXY, NO_PROXY (to download the manifest)
#   join-master  CONTROL_PLANE_ENDPOINT*, BOOTSTRAP_TOKEN*, CA_CERT_HASH*,
#                CERTIFICATE_KEY*
#   join-worker  CONTROL_PLANE_ENDPOINT*, BOOTSTRAP_TOKEN*, CA_CERT_HASH*
#   refresh-join BOOTSTRAP_TOKEN*, CERTIFICATE_KEY, and CNI, CNI_MANIFEST,
#                CNI_SHA256, POD_CIDR (then the CNI is applied, idempotently),
#                HTTP_PROXY, HTTPS_PROXY, NO_PROXY (to download the manifest)
#   hosts        HOSTS* (ip=name,... of all nodes): the /etc/hosts block
#                (prepare keeps it too); after nodes were added or removed.
#                The REGISTRY_* keys as for prepare: each registry's
#                certs.d is written anew (containerd reads it at each pull),
#                so nodes outside an operation take rotated credentials
#   storage      the NFS server VM, not a node: VOLUMES* ("ID GIB DEVICE
#                MOUNT;...": Cinder's volume id and size, the device Nova
#                reports), EXPORTS* ("DIR CLIENT;..."; CLIENT an IP or
#                CIDR), HTTP_PROXY, HTTPS_PROXY, NO_PROXY (for apt). Each
#                volume is found by its id under /dev/disk/by-id (virtio,
#                virtio-scsi or NVMe serial; never by DEVICE, which the
#                guest need not agree with) and its size must be GIB GiB;
#                a disk that cannot be identified so is never touched. A
#                volume without a filesystem gets ext4 (one that has one is
#                used as it is), is mounted and kept in /etc/fstab by UUID;
#                the directories are exported with EXPORT_OPTIONS below.
#   status       read-only: prints this node's facts (see role_status)
#   reset        kubeadm reset -f: undoes a half-finished init or join
#   upgrade      K8S_VERSION* (the minor to move to: one above the node's),
#                K8S_APT_KEY_FINGERPRINTS*, IMAGE_BUNDLE, K8S_PATCH (as
#                for prepare, the new version's bundle), UPGRADE* (apply: "kubeadm upgrade apply", on the first
#                master upgraded; node: "kubeadm upgrade node", on every
#                other node), K8S_APT_REPO, K8S_APT_KEY_URL, HTTP_PROXY,
#                HTTPS_PROXY, NO_PROXY. The driver drains the node first.
#                In kubeadm's order: the new minor's repository, kubeadm,
#                kubeadm upgrade, kubelet and kubectl, kubelet restart.
#                Prints KUBERNETES_VERSION=vX.Y.Z (the version kubeadm
#                upgraded to).
# Every role but status records its completion as its last step, in
# $STATE_DIR/done/ROLE ("CONTRACT_VERSION=N"); "kubeadm init"/"kubeadm join"
# are recorded (done/kubeadm-init, done/kubeadm-join) when they exit 0.
# Output: init and refresh-join print one line CA_CERT_HASH=sha256:<hex>,
# prepare one line SANDBOX_IMAGE=<image> (what containerd now uses) and
# then the facts the status role prints, as of its end (the driver decides
# the node's init or join with them instead of asking again), on
# stdout; progress ("[role] step") and errors ("ERROR [role/step]: ...") go
# to stderr. Every role is idempotent: a second run changes nothing.
# Secrets: BOOTSTRAP_TOKEN and CERTIFICATE_KEY reach kubeadm only in
# configuration files (--config) under SECRET_DIR, never on a command line;
# the role removes them when it ends, success or failure (see "secret
# files" below).
# Needs kubeadm >= 1.31 (configuration kubeadm.k8s.io/v1beta4) and IPv4.
set -Eeuo pipefail
shopt -s inherit_errexit lastpipe
readonly SCRIPT_UMASK=022
umask "$SCRIPT_UMASK"
export LC_ALL=C DEBIAN_FRONTEND=noninteractive
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin

# The contract with the driver: roles, keys and outputs above. The driver
# refuses a script whose version differs from its own. Raise it with every
# incompatible change; 2: prepare takes IMAGE_REPOSITORY and prints
# SANDBOX_IMAGE, init requires CNI_SHA256; 3: status and reset roles,
# completion records, refresh-join applies the CNI, storage's VOLUMES
# items are "ID GIB DEVICE MOUNT"; 4: upgrade role; 5: the apt key pinned
# by fingerprint, registries with CA, client certificate and credentials.
readonly CONTRACT_VERSION=6

readonly STATE_DIR=/var/lib/kubernetes-mgmt
readonly ADMIN_CONF=/etc/kubernetes/admin.conf
readonly CRI_SOCKET=unix:///var/run/containerd/containerd.sock
readonly KEYRING=/etc/apt/keyrings/kubernetes-apt-keyring.gpg
readonly CERTS_D=/etc/containerd/certs.d
readonly DEFAULT_IMAGE_REPOSITORY=registry.k8s.io
readonly CHECK_SCRIPT=/etc/keepalived/check_apiserver_lb.sh
readonly MANAGED='Managed by kubernetes-mgmt (install_k8s_cluster.sh): local changes are overwritten.'
readonly EPHEMERAL='Written by kubernetes-mgmt (install_k8s_cluster.sh) for kubeadm; removed when the role ends.'
readonly HOSTS_BEGIN='# BEGIN kubernetes-mgmt nodes'
readonly HOSTS_END='# END kubernetes-mgmt nodes'

ROLE=install STEP=arguments CHANGED=0 WORK='' PENDING='' SANDBOX_IMAGE=''
DEADLINE=600
declare -A CFG=()
SECRETS=()

# ---------------------------------------------------------------- messages
log() { printf '[%s] %s\n' "$ROLE" "$*" >&2; }
step() { STEP=$1; log "$1"; }
die() { printf 'ERROR [%s/%s]: %s\n' "$ROLE" "$STEP" "$*" >&2; exit 1; }

# BASH_COMMAND is the command as written here, before expansion: naming it
# never reveals a secret value.
on_err() {
    local rc=$1
    # A failing $(...) reports once, in the shell that ran it.
    if (( BASH_SUBSHELL == 0 )); then
        printf 'ERROR [%s/%s]: command failed (exit %s): %s\n' \
            "$ROLE" "$STEP" "$rc" "$2" >&2
    fi
    exit "$rc"
}
trap 'on_err "$?" "$BASH_COMMAND"' ERR

cleanup() {
    [[ -z $PENDING ]] || rm -f "$PENDING"
    remove_secret_files
    [[ -z $WORK ]] || rm -rf "$WORK"
}
trap cleanup EXIT

# Masks secrets in everything the commands we run print (kubeadm, apt...).
redact_stream() {
    trap - ERR
    set +e
    local line s
    while IFS= read -r line || [[ -n $line ]]; do
        for s in "${SECRETS[@]}"; do line=${line//"$s"/***}; done
        printf '%s\n' "$line"
    done
}

# Polls "$@" with backoff (0.2 s doubling to 5 s) until it succeeds or
# DEADLINE seconds pass: never a fixed sleep.
wait_for() {
    local what=$1 tenths=2 end=$((SECONDS + DEADLINE))
    shift
    until "$@"; do
        (( SECONDS < end )) || die "timed out after ${DEADLINE}s waiting for $what"
        sleep "$((tenths / 10)).$((tenths % 10))"
        tenths=$(( tenths * 2 > 50 ? 50 : tenths * 2 ))
    done
}

# ------------------------------------------------------------------- files
# put_file PATH MODE [VALIDATOR ARGS...] < text
# Replaces PATH only when the text differs (atomically, via a file in the
# same directory; VALIDATOR ARGS TMPFILE must accept it first). Sets
# CHANGED=1 when it wrote, 0 otherwise. PATH is absolute. The text is
# compared and written by bash itself, the new file made with its mode by
# the umask: an unchanged file costs one process (the mode check), a new
# one one (mv), and a prepare writes about ten files on a VM where every
# process counts. Binary content: put_binary_file.
put_file() {
    local path=$1 mode=$2 content current
    shift 2
    check_target "$path"
    # read -d '' stops at a NUL byte (status 0): text has none.
    if IFS= read -r -d '' content; then die "put_file $path: binary content (use put_binary_file)"; fi
    if [[ -f $path ]]; then
        current=''
        IFS= read -r -d '' current <"$path" || true
        if [[ $current == "$content" ]]; then
            keep_mode "$path" "$mode"
            return 0
        fi
    fi
    new_pending "$path" "$mode"
    printf '%s' "$content" >"$PENDING"
    commit_pending "$path" "$mode" "$@"
}

# put_binary_file PATH MODE < bytes: put_file for content with NUL bytes.
put_binary_file() {
    local path=$1 mode=$2
    check_target "$path"
    new_pending "$path" "$mode"
    cat >"$PENDING"
    if [[ -f $path ]] && cmp -s "$PENDING" "$path"; then
        rm -f "$PENDING"
        PENDING=''
        keep_mode "$path" "$mode"
        return 0
    fi
    commit_pending "$path" "$mode"
}

check_target() { [[ $1 == /?* ]] || die "put_file needs an absolute path: $1"; }

keep_mode() { # PATH MODE: an unchanged file
    if (( 8#$(stat -c %a "$1") != 8#$2 )); then chmod "$2" "$1"; fi
    CHANGED=0
}

# PENDING: a new empty file beside PATH, created (never opened if it
# exists) with MODE's permissions but the execute bits.
new_pending() { # PATH MODE
    local dir=${1%/*} mask pending
    dir=${dir:-/}
    [[ -d $dir ]] || mkdir -p "$dir"
    printf -v mask '%03o' $(( ~8#$2 & 8#666 ))
    pending=$dir/.kmgmt.$BASHPID.$RANDOM$RANDOM
    umask "$mask"
    set -o noclobber
    : >"$pending"
    set +o noclobber
    umask "$SCRIPT_UMASK"
    PENDING=$pending    # only once it is ours: the EXIT trap removes it
}

commit_pending() { # PATH MODE [VALIDATOR ARGS...]
    local path=$1 mode=$2
    shift 2
    if (( $# )) && ! "$@" "$PENDING" >&2; then
        die "rendered $path rejected by $1"
    fi
    if (( 8#$mode & 8#7111 )); then chmod "$mode" "$PENDING"; fi
    mv -f "$PENDING" "$path"
    PENDING=''
    CHANGED=1
    log "wrote $path"
}

remove_file() { # PATH: sets CHANGED like put_file
    CHANGED=0
    if [[ -e $1 ]]; then rm -f "$1"; CHANGED=1; log "removed $1"; fi
}

# ------------------------------------------------------------ secret files
# The bootstrap token and the certificate key are given to kubeadm in
# configuration files only: never on a command line (any local user sees
# those in ps), never in a file that outlives the role. The files live in
# SECRET_DIR, root's (0700) on /run (tmpfs: never on a persistent disk),
# each 0600, and the EXIT trap removes the directory whatever the outcome.
# A run killed outright (SIGKILL, power loss) leaves it until the next run
# of any role (which clears it under the lock) or the next boot. Secret
# lines are written with printf, a builtin: no process gets them in argv.
readonly SECRET_DIR=/run/kubernetes-mgmt-secrets
# What earlier versions of this script kept (token and certificate key).
readonly LEGACY_SECRET_FILES=(/etc/kubernetes/kubeadm-init.yaml /etc/kubernetes/kubeadm-join.yaml)
# Paths cleanup removes when the role ends (SECRET_DIR once made; kubeadm's
# bootstrap-kubelet.conf, which holds the token, after a join attempt).
SECRET_PATHS=()

# Under the install lock: no other run can be using SECRET_DIR.
clear_secrets_left_behind() {
    local path
    if [[ -e $SECRET_DIR ]]; then rm -rf "$SECRET_DIR"; fi
    for path in "${LEGACY_SECRET_FILES[@]}"; do remove_file "$path"; done
}

make_secret_dir() {
    [[ -d $SECRET_DIR ]] && return 0
    mkdir -m 0700 "$SECRET_DIR"
    SECRET_PATHS+=("$SECRET_DIR")
}

# write_secret_file NAME < content: SECRET_DIR/NAME, 0600 from the start.
write_secret_file() {
    make_secret_dir
    (umask 077 && cat >"$SECRET_DIR/$1")
}

remove_secret_files() {
    if (( ${#SECRET_PATHS[@]} )); then rm -rf -- "${SECRET_PATHS[@]}"; fi
}

# bootstrapTokens of an InitConfiguration: kubeadm init and kubeadm token
# create --config create them.
render_bootstrap_tokens() { # TTL
    printf 'bootstrapTokens:\n  - token: "%s"\n' "${CFG[BOOTSTRAP_TOKEN]}"
    cat <<EOF
    ttl: $1
    description: "kubernetes-mgmt bootstrap token"
    usages: [signing, authentication]
    groups: ["system:bootstrappers:kubeadm:default-node-token"]
EOF
}

render_certificate_key() { # [INDENT]
    if [[ -n ${CFG[CERTIFICATE_KEY]:-} ]]; then
        printf '%scertificateKey: "%s"\n' "${1:-}" "${CFG[CERTIFICATE_KEY]}"
    fi
}

# The InitConfiguration document of init and refresh-join: this node,
# the bootstrap token (valid for TTL) and the certificate key.
render_init_configuration() { # TTL
    cat <<EOF
# $EPHEMERAL
apiVersion: kubeadm.k8s.io/v1beta4
kind: InitConfiguration
EOF
    render_bootstrap_tokens "$1"
    render_certificate_key
    cat <<EOF
localAPIEndpoint:
  advertiseAddress: ${CFG[NODE_IP]}
  bindPort: 6443
nodeRegistration:
  name: ${CFG[NODE_NAME]}
  criSocket: $CRI_SOCKET
EOF
}

# refresh-join: the token for "kubeadm token create --config" and the key
# for "kubeadm init phase upload-certs --config". The ClusterConfiguration
# names the running version: kubeadm would look one up on the internet.
render_join_secrets_config() { # TTL VERSION
    render_init_configuration "$1"
    cat <<EOF
---
apiVersion: kubeadm.k8s.io/v1beta4
kind: ClusterConfiguration
kubernetesVersion: $2
EOF
}

# ------------------------------------------------------------------ config
readonly OCTET='(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])'
readonly IP_RE="^$OCTET\.$OCTET\.$OCTET\.$OCTET$"
readonly LABEL='[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?'
readonly NAME_RE="^$LABEL(\.$LABEL)*$"
readonly PORT_RE='[0-9]{1,5}'
readonly URL_RE="^https?://[A-Za-z0-9.-]+(:$PORT_RE)?(/[A-Za-z0-9._~:/%+=-]*)?$"
readonly USERINFO='[A-Za-z0-9._~%!*+=-]+(:[A-Za-z0-9._~%!*+=-]*)?@'
readonly PROXY_RE="^https?://($USERINFO)?[A-Za-z0-9.-]+(:$PORT_RE)?/?$"

# BEGIN contract tables: rendered from kubernetes_mgmt/cluster/contract.py by
# tools/sync_script_contract.py; change them there, never here.
readonly COMMON_REQUIRED='NODE_NAME NODE_IP'
readonly COMMON_OPTIONAL='DEADLINE'
declare -A KEY_TYPE=(
    [NODE_NAME]=name
    [NODE_IP]=ip
    [DEADLINE]=seconds
    [K8S_VERSION]=minor
    [K8S_APT_REPO]=url
    [K8S_APT_KEY_URL]=url
    [HTTP_PROXY]=proxy
    [HTTPS_PROXY]=proxy
    [NO_PROXY]=noproxy
    [K8S_APT_KEY_FINGERPRINTS]=fingerprints
    [IMAGE_BUNDLE]=abspath
    [K8S_PATCH]=patch
    [REGISTRY_MIRRORS]=mirrors
    [REGISTRY_CA]=regblobs
    [REGISTRY_CLIENT_CERT]=regblobs
    [REGISTRY_CLIENT_KEY]=regblobs
    [REGISTRY_AUTH]=regblobs
    [REGISTRY_SKIP_VERIFY]=registries
    [HOSTS]=hosts
    [LB_PORT]=lbport
    [LB_BACKENDS]=backends
    [VIP]=ip
    [VIP_PREFIX]=prefix
    [VRRP_ROUTER_ID]=routerid
    [VRRP_PRIORITY]=priority
    [VRRP_STATE]=vrrpstate
    [VRRP_PASSWORD]=vrrppass
    [VRRP_PEERS]=iplist
    [CONTROL_PLANE_ENDPOINT]=endpoint
    [POD_CIDR]=cidr
    [SERVICE_CIDR]=cidr
    [API_CERT_SANS]=sans
    [BOOTSTRAP_TOKEN]=token
    [CERTIFICATE_KEY]=certkey
    [CA_CERT_HASH]=cahash
    [IMAGE_REPOSITORY]=imagerepo
    [CNI]=cni
    [CNI_MANIFEST]=manifest
    [CNI_SHA256]=sha256
    [NFS_CLIENT]=flag
    [VOLUMES]=volumes
    [EXPORTS]=exports
    [UPGRADE]=upgrade
)
declare -A REQUIRED=(
    [prepare]='K8S_VERSION K8S_APT_KEY_FINGERPRINTS'
    [lb]='LB_BACKENDS VIP VIP_PREFIX VRRP_ROUTER_ID VRRP_PRIORITY VRRP_STATE VRRP_PASSWORD VRRP_PEERS'
    [init]='K8S_VERSION CONTROL_PLANE_ENDPOINT POD_CIDR SERVICE_CIDR BOOTSTRAP_TOKEN CNI CNI_MANIFEST CNI_SHA256'
    [join-master]='CONTROL_PLANE_ENDPOINT BOOTSTRAP_TOKEN CA_CERT_HASH CERTIFICATE_KEY'
    [join-worker]='CONTROL_PLANE_ENDPOINT BOOTSTRAP_TOKEN CA_CERT_HASH'
    [refresh-join]='BOOTSTRAP_TOKEN'
    [hosts]='HOSTS'
    [storage]='VOLUMES EXPORTS'
    [status]=''
    [reset]=''
    [upgrade]='K8S_VERSION UPGRADE K8S_APT_KEY_FINGERPRINTS'
)
declare -A OPTIONAL=(
    [prepare]='K8S_APT_REPO K8S_APT_KEY_URL REGISTRY_MIRRORS REGISTRY_CA REGISTRY_CLIENT_CERT REGISTRY_CLIENT_KEY REGISTRY_AUTH REGISTRY_SKIP_VERIFY HOSTS HTTP_PROXY HTTPS_PROXY NO_PROXY NFS_CLIENT IMAGE_REPOSITORY IMAGE_BUNDLE K8S_PATCH'
    [lb]='LB_PORT'
    [init]='CERTIFICATE_KEY IMAGE_REPOSITORY API_CERT_SANS HTTP_PROXY HTTPS_PROXY NO_PROXY'
    [join-master]=''
    [join-worker]=''
    [refresh-join]='CERTIFICATE_KEY CNI CNI_MANIFEST CNI_SHA256 POD_CIDR HTTP_PROXY HTTPS_PROXY NO_PROXY'
    [hosts]='REGISTRY_MIRRORS REGISTRY_CA REGISTRY_CLIENT_CERT REGISTRY_CLIENT_KEY REGISTRY_AUTH REGISTRY_SKIP_VERIFY'
    [storage]='HTTP_PROXY HTTPS_PROXY NO_PROXY'
    [status]=''
    [reset]=''
    [upgrade]='K8S_APT_REPO K8S_APT_KEY_URL HTTP_PROXY HTTPS_PROXY NO_PROXY IMAGE_BUNDLE K8S_PATCH'
)
declare -A HINT=(
    [name]='a lowercase DNS name ([a-z0-9.-])'
    [regblobs]='"registry=<base64>,..."'
    [registries]='"registry[:port],..."'
    [abspath]='an absolute path'
    [patch]='X.Y.Z, e.g. 1.37.1'
    [fingerprints]='40 uppercase hex digits, comma-separated'
    [lbport]='a port other than 6443'
    [vrrppass]='1-8 characters of [A-Za-z0-9._~+=-]'
    [token]='a bootstrap token [a-z0-9]{6}.[a-z0-9]{16}'
    [certkey]='64 lowercase hex digits'
    [cahash]='sha256:<64 hex digits>'
    [sha256]='64 lowercase hex digits'
    [upgrade]='apply or node'
    [volumes]='"VOLUME-ID GIB /dev/DEVICE /MOUNT/POINT;..."'
    [exports]='"/DIR IP-OR-CIDR;..."'
)
# END contract tables
readonly PROXY_KEYS=(HTTP_PROXY HTTPS_PROXY NO_PROXY)

int_in() { [[ $1 =~ ^[0-9]{1,6}$ ]] && (( 10#$1 >= $2 && 10#$1 <= $3 )); }
is_host() { [[ $1 =~ $IP_RE || $1 =~ $NAME_RE ]]; }
# each_item LIST CHECK: every comma-separated item passes CHECK.
each_item() {
    local list=$1 item items
    shift
    [[ -n $list && $list != ,* && $list != *, && $list != *,,* ]] || return 1
    IFS=, read -r -a items <<<"$list"
    for item in "${items[@]}"; do "$@" "$item" || return 1; done
}
is_ip_name() { [[ ${1%%=*} =~ $IP_RE && ${1#*=} =~ $NAME_RE ]]; }
is_name_ip() { [[ ${1%%=*} =~ $NAME_RE && ${1#*=} =~ $IP_RE ]]; }
is_registry() { [[ $1 == _default || $1 =~ ^$LABEL(\.$LABEL)*(:$PORT_RE)?$ ]]; }
is_mirror() { [[ $1 == *=* ]] && is_registry "${1%%=*}" && [[ ${1#*=} =~ $URL_RE ]]; }
is_registry_blob() { [[ $1 == *=* ]] && is_registry "${1%%=*}" && [[ ${1#*=} =~ ^[A-Za-z0-9+/]+={0,2}$ ]]; }
is_fingerprint() { [[ $1 =~ ^[0-9A-F]{40}$ ]]; }
is_noproxy_item() { [[ $1 =~ ^[A-Za-z0-9.*/:_-]+$ ]]; }
is_ip() { [[ $1 =~ $IP_RE ]]; }
# Absolute, normalized paths of the characters the driver accepts.
is_abs_path() { [[ $1 =~ ^(/[A-Za-z0-9._+@%=,-]+)+$ && /$1/ != */../* && /$1/ != */./* ]]; }
is_device() { [[ $1 =~ ^/dev/[A-Za-z0-9._/-]+$ && /$1/ != */../* ]]; }
is_client() {
    [[ $1 =~ $IP_RE ]] || { [[ ${1%/*} =~ $IP_RE && $1 == */* ]] && int_in "${1##*/}" 0 32; } ||
        [[ $1 =~ ^[0-9A-Fa-f:]+(/[0-9]{1,3})?$ && $1 == *:* ]]
}
# each_pair LIST CHECK1 CHECK2: "A B;A B;..." with CHECK1 A and CHECK2 B.
each_pair() {
    local list=$1 item items
    [[ -n $list && $list != \;* && $list != *\; && $list != *\;\;* ]] || return 1
    IFS=';' read -r -a items <<<"$list"
    for item in "${items[@]}"; do
        [[ $item == *' '* && ${item#* } != *' '* ]] || return 1
        "$2" "${item%% *}" && "$3" "${item#* }" || return 1
    done
}

# each_volume LIST: "ID GIB DEVICE MOUNT;..." (storage's VOLUMES).
each_volume() {
    local list=$1 item items id gib dev mnt extra
    [[ -n $list && $list != \;* && $list != *\; && $list != *\;\;* ]] || return 1
    IFS=';' read -r -a items <<<"$list"
    for item in "${items[@]}"; do
        read -r id gib dev mnt extra <<<"$item"
        [[ -z $extra && $item == "$id $gib $dev $mnt" ]] || return 1
        [[ $id =~ ^[A-Za-z0-9][A-Za-z0-9-]{7,63}$ ]] && int_in "$gib" 1 999999 &&
            is_device "$dev" && is_abs_path "$mnt" || return 1
    done
}

# valid TYPE VALUE -> status; the value itself is never printed.
valid() {
    local v=$2
    case $1 in
        name) [[ ${#v} -le 253 && $v =~ $NAME_RE ]] ;;
        ip) [[ $v =~ $IP_RE ]] ;;
        seconds) int_in "$v" 1 86400 ;;
        minor) [[ $v =~ ^1\.[0-9]{1,3}$ ]] ;;
        url) [[ $v =~ $URL_RE ]] ;;
        proxy) [[ $v =~ $PROXY_RE ]] ;;
        noproxy) each_item "$v" is_noproxy_item ;;
        mirrors) each_item "$v" is_mirror ;;
        regblobs) each_item "$v" is_registry_blob ;;
        registries) each_item "$v" is_registry ;;
        fingerprints) each_item "$v" is_fingerprint ;;
        abspath) is_abs_path "$v" ;;
        patch) [[ $v =~ ^1\.[0-9]{1,3}\.[0-9]{1,3}$ ]] ;;
        hosts) each_item "$v" is_ip_name ;;
        backends) each_item "$v" is_name_ip ;;
        iplist) each_item "$v" is_ip ;;
        sans) each_item "$v" is_host ;;
        lbport) int_in "$v" 1 65535 && (( 10#$v != 6443 )) ;;
        prefix) int_in "$v" 1 32 ;;
        routerid) int_in "$v" 1 255 ;;
        priority) int_in "$v" 1 254 ;;
        vrrpstate) [[ $v == MASTER || $v == BACKUP ]] ;;
        vrrppass) [[ $v =~ ^[A-Za-z0-9._~+=-]{1,8}$ ]] ;;
        endpoint) [[ $v == *:* ]] && is_host "${v%:*}" && int_in "${v##*:}" 1 65535 ;;
        cidr) [[ ${v%/*} =~ $IP_RE && $v == */* ]] && int_in "${v##*/}" 0 32 ;;
        token) [[ $v =~ ^[a-z0-9]{6}\.[a-z0-9]{16}$ ]] ;;
        certkey) [[ $v =~ ^[a-f0-9]{64}$ ]] ;;
        cahash) [[ $v =~ ^sha256:[a-f0-9]{64}$ ]] ;;
        imagerepo) [[ $v =~ ^$LABEL(\.$LABEL)*(:$PORT_RE)?(/[a-z0-9]([a-z0-9._-]*[a-z0-9])?)*$ ]] ;;
        cni) [[ $v == calico || $v == flannel ]] ;;
        manifest) [[ $v =~ $URL_RE || ( $v =~ ^/[A-Za-z0-9._/-]+$ && $v != *..* ) ]] ;;
        sha256) [[ $v =~ ^[a-f0-9]{64}$ ]] ;;
        flag) [[ $v == 0 || $v == 1 ]] ;;
        upgrade) [[ $v == apply || $v == node ]] ;;
        volumes) each_volume "$v" ;;
        exports) each_pair "$v" is_abs_path is_client ;;
        *) return 1 ;;
    esac
}

read_config() {
    local src=$1 line key n=0
    if [[ $src == - ]]; then
        exec 5<&0
    else
        [[ -f $src && -r $src ]] || die 'cannot read the config file'
        exec 5<"$src"
    fi
    while IFS= read -r line <&5 || [[ -n $line ]]; do
        n=$((n + 1))
        line=${line%$'\r'}
        [[ $line =~ ^[[:space:]]*(#.*)?$ ]] && continue
        [[ $line =~ ^([A-Z][A-Z0-9_]*)=(.*)$ ]] || die "config line $n is not KEY=VALUE"
        key=${BASH_REMATCH[1]}
        [[ -n ${KEY_TYPE[$key]:-} ]] || die "config line $n: unknown key $key"
        [[ -z ${CFG[$key]+set} ]] || die "config line $n: $key is given twice"
        CFG[$key]=${BASH_REMATCH[2]}
    done
    exec 5<&-
}

validate_config() {
    local key value required
    local allowed=" $COMMON_REQUIRED $COMMON_OPTIONAL ${REQUIRED[$ROLE]} ${OPTIONAL[$ROLE]} "
    read -r -a required <<<"$COMMON_REQUIRED ${REQUIRED[$ROLE]}"
    for key in "${required[@]}"; do
        [[ -n ${CFG[$key]:-} ]] || die "$key is required for role $ROLE"
    done
    for key in "${!CFG[@]}"; do
        [[ $allowed == *" $key "* ]] || die "$key is not used by role $ROLE"
        if [[ -z ${CFG[$key]} ]]; then unset "CFG[$key]"; continue; fi
        valid "${KEY_TYPE[$key]}" "${CFG[$key]}" ||
            die "invalid $key: expected ${HINT[${KEY_TYPE[$key]}]:-a valid ${KEY_TYPE[$key]}}"
    done
    DEADLINE=${CFG[DEADLINE]:-600}
    # Masked in all output (values shorter than 3 characters would garble it).
    for key in BOOTSTRAP_TOKEN CERTIFICATE_KEY VRRP_PASSWORD HTTP_PROXY HTTPS_PROXY; do
        value=${CFG[$key]:-}
        if (( ${#value} >= 3 )); then SECRETS+=("$value"); fi
    done
    if [[ -n ${CFG[BOOTSTRAP_TOKEN]:-} ]]; then SECRETS+=("${CFG[BOOTSTRAP_TOKEN]#*.}"); fi
    mask_registry_secrets
}

# The client keys and Authorization headers, as given (base64) and as
# written (the header, and its credentials part).
mask_registry_secrets() {
    local item items header
    IFS=, read -r -a items <<<"${CFG[REGISTRY_CLIENT_KEY]:-}${CFG[REGISTRY_CLIENT_KEY]:+,}${CFG[REGISTRY_AUTH]:-}"
    for item in "${items[@]}"; do SECRETS+=("${item#*=}"); done
    IFS=, read -r -a items <<<"${CFG[REGISTRY_AUTH]:-}"
    for item in "${items[@]}"; do
        header=$(base64 -d <<<"${item#*=}" 2>/dev/null) || die 'REGISTRY_AUTH: an item is not base64'
        [[ $header =~ ^(Basic|Bearer)\ [A-Za-z0-9._~+/=-]+$ ]] ||
            die 'REGISTRY_AUTH: an item is not a Basic or Bearer Authorization value'
        SECRETS+=("$header" "${header#* }")
    done
}

# ------------------------------------------------------------------ helpers
need_cmd() {
    local c
    for c in "$@"; do
        command -v "$c" >/dev/null || die "$c is not installed (run the prepare role first)"
    done
}

# Downloads go through the configured proxies (environment, never argv).
fetch() {
    http_proxy=${CFG[HTTP_PROXY]:-} https_proxy=${CFG[HTTPS_PROXY]:-} \
        no_proxy=${CFG[NO_PROXY]:-} \
        curl -fsSL --retry 5 --connect-timeout 30 --max-time "$DEADLINE" -o "$2" "$1"
}

# Installed versions of PACKAGE... in PKG_VERSION, with one dpkg-query for
# all of them (it exits 1 when some are unknown: that is expected).
declare -A PKG_VERSION=()
read_pkg_versions() {
    local name want ok state version
    PKG_VERSION=()
    while read -r name want ok state version; do
        if [[ "$want $ok $state" == 'install ok installed' ]]; then
            PKG_VERSION[$name]=$version
        fi
    done < <(dpkg-query -W -f='${Package} ${Status} ${Version}\n' "$@" 2>/dev/null || true)
}

pkg_installed() { # PACKAGE [VERSION-PREFIX], after read_pkg_versions
    [[ -v "PKG_VERSION[$1]" && ${PKG_VERSION[$1]} == "${2:-}"* ]]
}

apt_get() {
    apt-get -q -y -o DPkg::Lock::Timeout="$DEADLINE" \
        -o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold "$@"
}

api_ready() {
    [[ $(kubectl --kubeconfig "$ADMIN_CONF" get --raw /readyz 2>/dev/null) == ok ]]
}

# ------------------------------------------------------------------ prepare
check_os() { # OS-RELEASE-FILE
    step 'operating system'
    local release=$1 key value id='' version=''
    [[ -r $release ]] || die "$release is missing"
    while IFS='=' read -r key value; do
        value=${value#\"} value=${value%\"}
        case $key in ID) id=$value ;; VERSION_ID) version=$value ;; esac
    done <"$release"
    [[ $id == ubuntu && $version =~ ^(22|24|26)\.04$ ]] ||
        die 'unsupported OS: Ubuntu 22.04, 24.04 or 26.04 is required'
}

# FSTAB with its swap entries (third field "swap") commented out, nothing else.
swap_commented() { awk '!/^[[:space:]]*#/ && $3 == "swap" { print "#" $0; next } { print }' "$1"; }

disable_swap() {
    step 'swap off'
    if [[ -n $(swapon --show --noheadings 2>/dev/null || true) ]]; then swapoff -a; fi
    if [[ -f /etc/fstab ]]; then swap_commented /etc/fstab | put_file /etc/fstab 0644; fi
}

module_loaded() { [[ -d /sys/module/$1 ]] || lsmod | awk -v m="$1" '$1 == m { f = 1 } END { exit !f }'; }

sysctls_applied() {
    local kv
    for kv in net.bridge.bridge-nf-call-iptables=1 net.bridge.bridge-nf-call-ip6tables=1 net.ipv4.ip_forward=1; do
        [[ $(sysctl -n "${kv%=*}" 2>/dev/null) == "${kv#*=}" ]] || return 1
    done
}

setup_kernel() {
    step 'kernel modules'
    local m
    printf '%s\n' "# $MANAGED" overlay br_netfilter |
        put_file /etc/modules-load.d/kubernetes.conf 0644
    for m in overlay br_netfilter; do module_loaded "$m" || modprobe "$m"; done
    step 'sysctl'
    printf '%s\n' "# $MANAGED" 'net.bridge.bridge-nf-call-iptables = 1' \
        'net.bridge.bridge-nf-call-ip6tables = 1' 'net.ipv4.ip_forward = 1' |
        put_file /etc/sysctl.d/99-kubernetes.conf 0644
    if (( CHANGED )) || ! sysctls_applied; then sysctl --system >/dev/null; fi
}

# FILE with our marked block set to BLOCK ("": removed) where it stands
# (appended if new); every other line is left as it is.
with_hosts_block() {
    local begins ends
    begins=$(grep -cxF -- "$HOSTS_BEGIN" "$1" || true)
    ends=$(grep -cxF -- "$HOSTS_END" "$1" || true)
    [[ $begins == "$ends" ]] || die "$1 has a broken kubernetes-mgmt block: fix it by hand"
    KM_BLOCK=$2 KM_BEGIN=$HOSTS_BEGIN KM_END=$HOSTS_END awk '
        BEGIN { block = ENVIRON["KM_BLOCK"] }
        $0 == ENVIRON["KM_BEGIN"] { skip = 1; if (!done && block != "") print block; done = 1; next }
        skip { if ($0 == ENVIRON["KM_END"]) skip = 0; next }
        { print }
        END { if (!done && block != "") print block }' "$1"
}

setup_hosts() {
    step '/etc/hosts'
    local block='' pair items
    if [[ -n ${CFG[HOSTS]:-} ]]; then
        block=$HOSTS_BEGIN$'\n'
        IFS=, read -r -a items <<<"${CFG[HOSTS]}"
        for pair in "${items[@]}"; do block+="${pair%%=*} ${pair#*=}"$'\n'; done
        block+=$HOSTS_END
    fi
    with_hosts_block /etc/hosts "$block" | put_file /etc/hosts 0644
}

# systemd expands % specifiers in Environment=: double them.
sd_env() { local v=${2//\%/%%}; printf 'Environment="%s=%s"\n' "$1" "$v"; }

proxy_dropin() { # UNIT: sets CHANGED
    local path=/etc/systemd/system/$1.service.d/http-proxy.conf key
    if [[ -z ${CFG[HTTP_PROXY]:-}${CFG[HTTPS_PROXY]:-} ]]; then remove_file "$path"; return 0; fi
    {
        printf '# %s\n[Service]\n' "$MANAGED"
        for key in "${PROXY_KEYS[@]}"; do
            if [[ -n ${CFG[$key]:-} ]]; then sd_env "$key" "${CFG[$key]}"; fi
        done
    } | put_file "$path" 0640
}

apt_proxy() { # sets CHANGED
    local apt_conf=/etc/apt/apt.conf.d/95kubernetes-mgmt-proxy host items
    if [[ -z ${CFG[HTTP_PROXY]:-}${CFG[HTTPS_PROXY]:-} ]]; then
        remove_file "$apt_conf"
        return 0
    fi
    {
        printf '// %s\n' "$MANAGED"
        if [[ -n ${CFG[HTTP_PROXY]:-} ]]; then printf 'Acquire::http::Proxy "%s";\n' "${CFG[HTTP_PROXY]}"; fi
        if [[ -n ${CFG[HTTPS_PROXY]:-} ]]; then printf 'Acquire::https::Proxy "%s";\n' "${CFG[HTTPS_PROXY]}"; fi
        # apt has no no_proxy: plain host entries become DIRECT.
        IFS=, read -r -a items <<<"${CFG[NO_PROXY]:-}"
        for host in "${items[@]}"; do
            if [[ $host =~ ^[A-Za-z0-9-]+(\.[A-Za-z0-9-]+)*$ ]]; then
                printf 'Acquire::http::Proxy::%s "DIRECT";\nAcquire::https::Proxy::%s "DIRECT";\n' "$host" "$host"
            fi
        done
    } | put_file "$apt_conf" 0600
}

setup_proxy() {
    step 'proxy settings'
    APT_CHANGED=0 CONTAINERD_CHANGED=0 KUBELET_CHANGED=0
    apt_proxy
    APT_CHANGED=$CHANGED
    proxy_dropin containerd
    CONTAINERD_CHANGED=$CHANGED
    proxy_dropin kubelet
    KUBELET_CHANGED=$CHANGED
    if (( CONTAINERD_CHANGED || KUBELET_CHANGED )); then systemctl daemon-reload; fi
}

# Every primary key in KEYFILE must be one of K8S_APT_KEY_FINGERPRINTS:
# apt trusts the whole keyring, so one unpinned key is one too many.
check_key_fingerprints() { # KEYFILE
    local listing line found=() fpr expected=",${CFG[K8S_APT_KEY_FINGERPRINTS]},"
    listing=$(GNUPGHOME=$WORK/gnupg gpg --batch --with-colons --show-keys "$1" 2>/dev/null) ||
        die "the apt key at ${CFG[K8S_APT_KEY_URL]:-the repository} is not an OpenPGP key"
    local primary=0
    while IFS= read -r line; do
        case $line in
            pub:*) primary=1 ;;
            sub:*) primary=0 ;;
            fpr:*) if (( primary )); then fpr=${line#fpr:::::::::}; found+=("${fpr%%:*}"); primary=0; fi ;;
        esac
    done <<<"$listing"
    (( ${#found[@]} )) || die 'the apt key file holds no key'
    for fpr in "${found[@]}"; do
        [[ $expected == *",$fpr,"* ]] ||
            die "the apt key has fingerprint ${found[*]}; expected ${CFG[K8S_APT_KEY_FINGERPRINTS]//,/ or } (nothing was installed)"
    done
}

setup_apt_repo() {
    step 'Kubernetes apt repository'
    local repo=${CFG[K8S_APT_REPO]:-https://pkgs.k8s.io/core:/stable:/v${CFG[K8S_VERSION]}/deb/}
    repo=${repo%/}/
    fetch "${CFG[K8S_APT_KEY_URL]:-${repo}Release.key}" "$WORK/key"
    mkdir -m 0700 "$WORK/gnupg"
    check_key_fingerprints "$WORK/key"
    if grep -q -- '-----BEGIN PGP PUBLIC KEY BLOCK-----' "$WORK/key"; then
        GNUPGHOME=$WORK/gnupg gpg --batch --quiet --dearmor <"$WORK/key" >"$WORK/key.gpg"
    else
        cp "$WORK/key" "$WORK/key.gpg"
    fi
    put_binary_file "$KEYRING" 0644 <"$WORK/key.gpg"
    SOURCES_CHANGED=$(( CHANGED || APT_CHANGED ))
    printf '# %s\ndeb [signed-by=%s] %s /\n' "$MANAGED" "$KEYRING" "$repo" |
        put_file /etc/apt/sources.list.d/kubernetes.list 0644
    SOURCES_CHANGED=$(( SOURCES_CHANGED || CHANGED ))
}

# The version prefix of the Kubernetes packages to install: MINOR.*, or
# exactly K8S_PATCH (an image bundle holds that version's images only).
k8s_prefix() { # MINOR
    local patch=${CFG[K8S_PATCH]:-}
    if [[ -z $patch ]]; then printf '%s.' "$1"; return 0; fi
    [[ $patch == "$1".* ]] || die "K8S_PATCH $patch is not a version of $1"
    printf '%s-' "$patch"
}

install_packages() {
    step 'packages'
    local minor=${CFG[K8S_VERSION]} p missing=() hold=() held prefix
    local nfs=${CFG[NFS_CLIENT]:-0}
    prefix=$(k8s_prefix "$minor")
    read_pkg_versions containerd kubelet kubeadm kubectl nfs-common
    pkg_installed containerd || missing+=(containerd)
    for p in kubelet kubeadm kubectl; do
        pkg_installed "$p" "$prefix" || missing+=("$p=$prefix*")
    done
    if (( nfs )) && ! pkg_installed nfs-common; then missing+=(nfs-common); fi
    if (( SOURCES_CHANGED )) || (( ${#missing[@]} )); then apt_get update; fi
    if (( ${#missing[@]} )); then
        # Downgrades too: a rolled-back upgrade moves kubeadm back.
        apt_get --allow-change-held-packages --allow-downgrades install "${missing[@]}"
        read_pkg_versions kubelet kubeadm kubectl nfs-common
    fi
    for p in kubelet kubeadm kubectl; do
        pkg_installed "$p" "$prefix" || die "$p $prefix* is not installable from the repository"
    done
    if (( nfs )); then pkg_installed nfs-common || die 'nfs-common is not installable'; fi
    held=$(apt-mark showhold kubelet kubeadm kubectl)
    for p in kubelet kubeadm kubectl; do
        [[ $'\n'$held$'\n' == *$'\n'$p$'\n'* ]] || hold+=("$p")
    done
    if (( ${#hold[@]} )); then apt-mark hold "${hold[@]}" >/dev/null; fi
}

# The pause image kubeadm lists for its own version, under IMAGE_REPOSITORY
# (SANDBOX_IMAGE): containerd must not pull it from past a site's mirror.
find_sandbox_image() {
    step 'sandbox image'
    local repo=${CFG[IMAGE_REPOSITORY]:-$DEFAULT_IMAGE_REPOSITORY} version list line tag=''
    version=$(kubeadm version -o short)
    [[ $version =~ ^v[0-9]+\.[0-9]+\.[0-9]+([.+-][A-Za-z0-9.+-]*)?$ ]] ||
        die 'kubeadm version -o short printed no version'
    list=$(kubeadm config images list --kubernetes-version "$version" --image-repository "$repo")
    while IFS= read -r line; do
        if [[ $line == "$repo/pause:"* ]]; then tag=${line#"$repo/pause:"}; fi
    done <<<"$list"
    [[ $tag =~ ^[A-Za-z0-9_][A-Za-z0-9._-]{0,127}$ ]] ||
        die "kubeadm $version lists no pause image under $repo"
    SANDBOX_IMAGE=$repo/pause:$tag
}

# Layout version (2: containerd 1.x, 3: 2.x) of containerd config FILE:
# its top-level "version = N" line.
containerd_config_version() {
    awk '/^[[:space:]]*\[/ { exit }
        /^[[:space:]]*version[[:space:]]*=/ { v = $0; sub(/^[^=]*=[[:space:]]*/, "", v); sub(/[[:space:]]*(#.*)?$/, "", v); print v; exit }' "$1"
}

# TOML FILE with KEY = VALUE (VALUE as written) in table HEADER: the key's
# line replaced where it stands, else added right below the header; a
# missing table is appended (TOML allows a table after its sub-tables).
# Quotes in headers do not matter: ["a"] and ['a'] are the same table.
toml_with_key() { # FILE HEADER KEY VALUE
    KM_HEADER=${2//\"/\'} KM_KEY=$3 KM_VALUE=$4 awk '
        function name(line) {
            sub(/^[[:space:]]+/, "", line); sub(/[[:space:]]*(#.*)?$/, "", line)
            gsub(/"/, "\047", line); return line
        }
        function is_key(line) { return line ~ ("^[[:space:]]*" ENVIRON["KM_KEY"] "[[:space:]]*=") }
        function setting(indent) { return indent ENVIRON["KM_KEY"] " = " ENVIRON["KM_VALUE"] }
        FNR == 1 { table = "" }
        /^[[:space:]]*\[/ { table = name($0) }
        NR == FNR {
            if (table == ENVIRON["KM_HEADER"]) { found = 1; if (is_key($0)) has_key = 1 }
            next
        }
        /^[[:space:]]*\[/ && table == ENVIRON["KM_HEADER"] {
            print
            if (!has_key) { match($0, /^[[:space:]]*/); print setting(substr($0, 1, RLENGTH) "  ") }
            next
        }
        table == ENVIRON["KM_HEADER"] && is_key($0) { match($0, /^[[:space:]]*/); print setting(substr($0, 1, RLENGTH)); next }
        { print }
        END { if (!found) { print ""; print ENVIRON["KM_HEADER"]; print setting("  ") } }' "$1" "$1"
}

# FILE.new: FILE with SystemdCgroup = true in the runc options, a certs.d
# config_path, and SANDBOX_IMAGE as the sandbox image, for containerd 1.x
# (config version 2: sandbox_image of the CRI plugin) and 2.x (version 3:
# sandbox of the CRI images plugin's pinned_images).
patch_containerd_config() { # FILE SANDBOX_IMAGE
    local layout cri runc sandbox_key sandbox
    layout=$(containerd_config_version "$1")
    case $layout in
        2) cri="[plugins.'io.containerd.grpc.v1.cri']"
           runc="[plugins.'io.containerd.grpc.v1.cri'.containerd.runtimes.runc.options]"
           sandbox_key=sandbox_image sandbox="\"$2\"" ;;
        3) cri="[plugins.'io.containerd.cri.v1.images'.pinned_images]"
           runc="[plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]"
           sandbox_key=sandbox sandbox="'$2'" ;;
        *) die "/etc/containerd/config.toml has config version '${layout:0:10}': 2 (containerd 1.x) or 3 (2.x) is supported" ;;
    esac
    # Quotes aside, the runc options table must be there (it names the
    # runtime we configure; a new one would lack runtime_type).
    awk -v h="$runc" '{ l = $0; gsub(/"/, "\047", l); sub(/^[[:space:]]+/, "", l); sub(/[[:space:]]*(#.*)?$/, "", l) }
        l == h { f = 1 } END { exit !f }' "$1" ||
        die 'cannot find the runc options in /etc/containerd/config.toml'
    toml_with_key "$1" "$cri" "$sandbox_key" "$sandbox" >"$1.step"
    toml_with_key "$1.step" "$runc" SystemdCgroup true |
        sed -E "s#^([[:space:]]*config_path[[:space:]]*=[[:space:]]*)(\"\"|'')#\\1\"$CERTS_D\"#" >"$1.new"
    rm -f "$1.step"
}

configure_containerd() {
    find_sandbox_image
    step 'containerd'
    local conf=/etc/containerd/config.toml
    if [[ ! -s $conf ]]; then
        containerd config default >"$WORK/containerd.toml"
    else
        cp "$conf" "$WORK/containerd.toml"
    fi
    patch_containerd_config "$WORK/containerd.toml" "$SANDBOX_IMAGE"
    put_file "$conf" 0644 <"$WORK/containerd.toml.new"
    CONTAINERD_CHANGED=$(( CONTAINERD_CHANGED || CHANGED ))
}

# One certs.d/<registry>/ per configured registry: hosts.toml (the server,
# then each mirror in order), ca.crt, client.crt and client.key. Paths in
# hosts.toml are relative (containerd resolves them in the registry's
# directory). A hosts.toml with an Authorization header, and the client
# key, are 0600. containerd reads them at every pull: no restart. A
# directory we wrote for a registry no longer configured is removed.
declare -A REG_MIRRORS=() REG_CA=() REG_CERT=() REG_KEY=() REG_AUTH=() REG_SKIP=()

read_registry_items() { # KEY ARRAY-NAME: registry=<base64> items
    local -n into=$2
    local item items
    IFS=, read -r -a items <<<"${CFG[$1]:-}"
    # shellcheck disable=SC2034  # a nameref: the caller's array is written
    for item in "${items[@]}"; do into[${item%%=*}]=${item#*=}; done
}

read_registries() {
    local item items
    IFS=, read -r -a items <<<"${CFG[REGISTRY_MIRRORS]:-}"
    for item in "${items[@]}"; do REG_MIRRORS[${item%%=*}]+="${item#*=} "; done
    read_registry_items REGISTRY_CA REG_CA
    read_registry_items REGISTRY_CLIENT_CERT REG_CERT
    read_registry_items REGISTRY_CLIENT_KEY REG_KEY
    read_registry_items REGISTRY_AUTH REG_AUTH
    IFS=, read -r -a items <<<"${CFG[REGISTRY_SKIP_VERIFY]:-}"
    for item in "${items[@]}"; do REG_SKIP[$item]=1; done
    for item in "${!REG_CERT[@]}" "${!REG_KEY[@]}"; do
        [[ -n ${REG_CERT[$item]:-} && -n ${REG_KEY[$item]:-} ]] ||
            die "registry $item: a client certificate needs its key and the key its certificate"
    done
}

# The TLS and auth lines of one host entry of REG (INDENT before each).
registry_host_settings() { # REG INDENT HEADER-TABLE
    local reg=$1 in=$2
    if [[ -n ${REG_CA[$reg]:-} ]]; then printf '%sca = "ca.crt"\n' "$in"; fi
    if [[ -n ${REG_CERT[$reg]:-} ]]; then printf '%sclient = [["client.crt", "client.key"]]\n' "$in"; fi
    if [[ -n ${REG_SKIP[$reg]:-} ]]; then printf '%sskip_verify = true\n' "$in"; fi
    if [[ -n ${REG_AUTH[$reg]:-} ]]; then
        printf '%s%s\n%s  Authorization = ["%s"]\n' "$in" "$3" "$in" "$(base64 -d <<<"${REG_AUTH[$reg]}")"
    fi
}

# containerd 1.6 ignores a hosts.toml without a [host] table (and falls
# back to reading *.crt of the directory as CAs, dropping the client
# certificate and the header): a registry without mirrors gets a host
# entry for its own server.
render_hosts_toml() { # REG
    local reg=$1 url server='' hosts
    printf '# %s\n' "$MANAGED"
    case $reg in
        _default) ;;
        docker.io) server=https://registry-1.docker.io ;;
        *) server=https://$reg ;;
    esac
    if [[ -n $server ]]; then
        printf 'server = "%s"\n' "$server"
        registry_host_settings "$reg" '' '[header]'
    fi
    hosts=${REG_MIRRORS[$reg]:-$server}
    for url in $hosts; do
        printf '\n[host."%s"]\n  capabilities = ["pull", "resolve"]\n' "$url"
        registry_host_settings "$reg" '  ' "[host.\"$url\".header]"
    done
}

put_registry_pem() { # REG FILE MODE BASE64-OR-EMPTY
    local path=$CERTS_D/$1/$2
    if [[ -z $4 ]]; then remove_file "$path"; return 0; fi
    base64 -d <<<"$4" | put_file "$path" "$3"
}

setup_registries() {
    step 'registries'
    local reg file mode name
    read_registries
    if [[ -n ${CFG[REGISTRY_SKIP_VERIFY]:-} ]]; then
        log "WARNING: TLS certificates not verified for ${CFG[REGISTRY_SKIP_VERIFY]//,/, }"
    fi
    local -A regs=()
    for reg in "${!REG_MIRRORS[@]}" "${!REG_CA[@]}" "${!REG_CERT[@]}" "${!REG_AUTH[@]}" "${!REG_SKIP[@]}"; do
        regs[$reg]=1
    done
    for reg in "${!regs[@]}"; do
        mkdir -p "$CERTS_D/$reg"
        put_registry_pem "$reg" ca.crt 0644 "${REG_CA[$reg]:-}"
        put_registry_pem "$reg" client.crt 0644 "${REG_CERT[$reg]:-}"
        put_registry_pem "$reg" client.key 0600 "${REG_KEY[$reg]:-}"
        mode=0644
        if [[ -n ${REG_AUTH[$reg]:-} ]]; then mode=0600; fi
        render_hosts_toml "$reg" | put_file "$CERTS_D/$reg/hosts.toml" "$mode"
    done
    for file in "$CERTS_D"/*/hosts.toml; do
        [[ -f $file ]] || continue
        reg=${file%/hosts.toml} reg=${reg##*/}
        if [[ -z ${regs[$reg]+set} ]] && grep -qF -- "$MANAGED" "$file"; then
            remove_file "$file"
            for name in ca.crt client.crt client.key; do remove_file "$CERTS_D/$reg/$name"; done
            rmdir --ignore-fail-on-non-empty "$CERTS_D/$reg"
        fi
    done
}

# "REF DIGEST" per image containerd's k8s.io namespace holds.
containerd_images() {
    ctr --namespace k8s.io images ls | awk 'NR > 1 { print $1 " " $3 }'
}

# IMAGE_BUNDLE/bundle.list: "SHA256 FILE REF DIGEST" per OCI archive the
# driver uploaded. Each archive is checked against its SHA-256 and
# imported unless containerd already holds its image at that digest;
# then every image must be there at its digest, so kubeadm never pulls.
import_image_bundle() {
    [[ -n ${CFG[IMAGE_BUNDLE]:-} ]] || return 0
    step 'image bundle'
    need_cmd ctr sha256sum
    local dir=${CFG[IMAGE_BUNDLE]} line have sum file ref digest entries=()
    local re='^([a-f0-9]{64}) ([A-Za-z0-9][A-Za-z0-9._-]{0,127}\.tar) ([a-z0-9][a-z0-9.:/_-]*:[A-Za-z0-9_][A-Za-z0-9._-]{0,127}) (sha256:[a-f0-9]{64})$'
    [[ -f $dir/bundle.list ]] || die "$dir/bundle.list is missing (the driver uploads it with the archives)"
    while IFS= read -r line; do
        [[ $line =~ $re ]] || die "$dir/bundle.list has a malformed line"
        entries+=("$line")
    done <"$dir/bundle.list"
    (( ${#entries[@]} )) || die "$dir/bundle.list names no image"
    have=$'\n'$(containerd_images)$'\n'
    for line in "${entries[@]}"; do
        read -r sum file ref digest <<<"$line"
        [[ $have == *$'\n'"$ref $digest"$'\n'* ]] && continue
        [[ $(sha256sum <"$dir/$file") == "$sum  -" ]] ||
            die "$dir/$file ($ref) does not have the SHA-256 the bundle lists"
        ctr --namespace k8s.io images import --digests "$dir/$file" >/dev/null
        log "imported $ref"
    done
    have=$'\n'$(containerd_images)$'\n'
    for line in "${entries[@]}"; do
        read -r sum file ref digest <<<"$line"
        [[ $have == *$'\n'"$ref $digest"$'\n'* ]] ||
            die "$ref is not in containerd at $digest after importing $file"
    done
}

# When the sandbox image's registry is configured here, prepare pulls it
# through that configuration (as containerd's CRI will): a wrong CA,
# client certificate or password fails here, naming the registry, rather
# than in kubeadm init.
check_registry_pull() {
    local out reg=${SANDBOX_IMAGE%%/*}
    [[ -z ${CFG[IMAGE_BUNDLE]:-} ]] || return 0   # the bundle has it
    # Only a registry given here is proven (others are as the site left them).
    [[ -n ${REG_MIRRORS[$reg]:-}${REG_MIRRORS[_default]:-}${REG_CA[$reg]:-}${REG_CERT[$reg]:-}${REG_AUTH[$reg]:-}${REG_SKIP[$reg]:-} ]] ||
        return 0
    step 'pull through the registries'
    need_cmd ctr
    if ! out=$(timeout "$DEADLINE" ctr --namespace k8s.io images pull --hosts-dir "$CERTS_D" \
            "$SANDBOX_IMAGE" 2>&1 | redact_stream); then
        die "cannot pull $SANDBOX_IMAGE from registry ${SANDBOX_IMAGE%%/*} with the configured mirrors, CA and credentials: $(pull_errors "$out")"
    fi
}

# What ctr said about each host it tried and its final error, one line.
pull_errors() { # CTR-OUTPUT
    grep -E 'msg="trying next host"|^ctr: ' <<<"$1" |
        sed -E 's/^time="[^"]*" level=[a-z]+ msg="trying next host" //' |
        tail -n 6 | paste -sd ';' - || true
}

start_services() {
    step 'services'
    # restart starts a stopped unit too: one check less per service.
    if ! systemctl is-enabled --quiet containerd; then systemctl enable containerd; fi
    if (( CONTAINERD_CHANGED )); then
        systemctl restart containerd
    elif ! systemctl is-active --quiet containerd; then
        systemctl start containerd
    fi
    # Until kubeadm configures it the kubelet restarts in a loop: by design.
    if ! systemctl is-enabled --quiet kubelet; then systemctl enable --now kubelet; fi
    if (( KUBELET_CHANGED )); then systemctl try-restart kubelet; fi
    wait_for 'containerd to be active' systemctl is-active --quiet containerd
}

role_prepare() {
    check_os /etc/os-release
    disable_swap
    setup_kernel
    setup_hosts
    setup_proxy
    need_cmd curl gpg
    setup_apt_repo
    install_packages
    configure_containerd
    setup_registries
    start_services
    import_image_bundle
    check_registry_pull
    printf 'SANDBOX_IMAGE=%s\n' "$SANDBOX_IMAGE" >&3
}

# Nodes outside an operation: the node list and the registries may have
# changed since their prepare.
role_hosts() {
    setup_hosts
    setup_registries
}

# ----------------------------------------------------------------------- lb
node_interface() {
    local _n dev _f addr _rest found=()
    while read -r _n dev _f addr _rest; do
        if [[ ${addr%/*} == "${CFG[NODE_IP]}" ]]; then found+=("${dev%@*}"); fi
    done < <(ip -o -4 addr show)
    (( ${#found[@]} == 1 )) || return 1
    [[ ${found[0]} =~ ^[A-Za-z0-9._-]{1,15}$ ]] || return 1
    printf '%s' "${found[0]}"
}

render_haproxy() {
    local pair items
    cat <<EOF
# $MANAGED
# TCP load balancer for kube-apiserver: every master's 6443 behind one port.
global
    log /dev/log local0
    chroot /var/lib/haproxy
    user haproxy
    group haproxy
    maxconn 4000

defaults
    log global
    mode tcp
    option tcplog
    option dontlognull
    # A connection the chosen API server refuses (a master being removed,
    # before the health checks mark it down) goes to another one.
    retries 3
    option redispatch
    timeout connect 5s
    # API watches and exec/log streams stay open for a long time.
    timeout client 1h
    timeout server 1h
    timeout check 5s

frontend kube-apiserver
    bind *:${CFG[LB_PORT]:-16443}
    default_backend kube-apiserver

backend kube-apiserver
    balance roundrobin
    option httpchk
    http-check send meth GET uri /healthz
    http-check expect status 200
    default-server check check-ssl verify none inter 2s downinter 1s fall 3 rise 2
EOF
    IFS=, read -r -a items <<<"${CFG[LB_BACKENDS]}"
    for pair in "${items[@]}"; do
        printf '    server %s %s:6443\n' "${pair%%=*}" "${pair#*=}"
    done
}

render_check_script() {
    cat <<EOF
#!/bin/bash
# $MANAGED
# keepalived track script: healthy while HAProxy accepts connections on the
# API load-balancer port. A TCP connect, not a process check, so it proves
# that this node really forwards.
exec /usr/bin/timeout 2 /bin/bash -c 'exec 3<>/dev/tcp/127.0.0.1/${CFG[LB_PORT]:-16443}' 2>/dev/null
EOF
}

render_keepalived() {
    local iface=$1 peer items
    cat <<EOF
# $MANAGED
global_defs {
    router_id ${CFG[NODE_NAME]}
    enable_script_security
    script_user root
}

vrrp_script check_apiserver_lb {
    script "$CHECK_SCRIPT"
    interval 2
    timeout 3
    fall 2
    rise 2
}

vrrp_instance kube_apiserver_vip {
    state ${CFG[VRRP_STATE]}
    interface $iface
    virtual_router_id ${CFG[VRRP_ROUTER_ID]}
    priority ${CFG[VRRP_PRIORITY]}
    advert_int 1
    # Unicast: clouds often drop VRRP multicast.
    unicast_src_ip ${CFG[NODE_IP]}
    unicast_peer {
EOF
    IFS=, read -r -a items <<<"${CFG[VRRP_PEERS]}"
    for peer in "${items[@]}"; do printf '        %s\n' "$peer"; done
    cat <<EOF
    }
    authentication {
        auth_type PASS
        auth_pass ${CFG[VRRP_PASSWORD]}
    }
    virtual_ipaddress {
        ${CFG[VIP]}/${CFG[VIP_PREFIX]} dev $iface
    }
    track_script {
        check_apiserver_lb
    }
}
EOF
}

keepalived_check() {
    local help
    help=$(keepalived --help 2>&1 || true)
    if [[ $help == *--config-test* ]]; then
        keepalived -t -f "$1"
    else
        log 'note: this keepalived cannot test a configuration (-t); not checked'
    fi
}

apply_service() { # UNIT CHANGED: reload on change keeps connections and the VIP
    if systemctl is-active --quiet "$1"; then
        if (( $2 )); then systemctl reload "$1"; fi
    else
        systemctl start "$1"
    fi
    if ! systemctl is-enabled --quiet "$1"; then systemctl enable "$1"; fi
}

# shellcheck disable=SC2016 # $1/$2 expand in the inner bash, as data
tcp_open() { timeout 2 bash -c 'exec 3<>"/dev/tcp/$1/$2"' _ "$1" "$2" 2>/dev/null; }

role_lb() {
    step 'packages'
    local missing=() p iface ha_changed ka_changed
    read_pkg_versions haproxy keepalived
    for p in haproxy keepalived; do pkg_installed "$p" || missing+=("$p"); done
    if (( ${#missing[@]} )); then
        apt_get update
        apt_get install "${missing[@]}"
    fi
    need_cmd haproxy keepalived ip
    step 'network interface'
    iface=$(node_interface) || die 'exactly one interface must hold NODE_IP'
    step 'haproxy'
    render_haproxy | put_file /etc/haproxy/haproxy.cfg 0640 haproxy -c -f
    ha_changed=$CHANGED
    step 'keepalived'
    render_check_script | put_file "$CHECK_SCRIPT" 0755
    render_keepalived "$iface" | put_file /etc/keepalived/keepalived.conf 0600 keepalived_check
    ka_changed=$CHANGED
    step 'services'
    apply_service haproxy "$ha_changed"
    apply_service keepalived "$ka_changed"
    wait_for 'HAProxy to listen' tcp_open 127.0.0.1 "${CFG[LB_PORT]:-16443}"
}

# --------------------------------------------------------------------- init
render_init_config() {
    local version=$1 san items
    render_init_configuration 24h0m0s
    cat <<EOF
  kubeletExtraArgs:
    - name: node-ip
      value: ${CFG[NODE_IP]}
---
apiVersion: kubeadm.k8s.io/v1beta4
kind: ClusterConfiguration
kubernetesVersion: $version
controlPlaneEndpoint: "${CFG[CONTROL_PLANE_ENDPOINT]}"
networking:
  podSubnet: ${CFG[POD_CIDR]}
  serviceSubnet: ${CFG[SERVICE_CIDR]}
EOF
    if [[ -n ${CFG[IMAGE_REPOSITORY]:-} ]]; then
        printf 'imageRepository: %s\n' "${CFG[IMAGE_REPOSITORY]}"
    fi
    if [[ -n ${CFG[API_CERT_SANS]:-} ]]; then
        printf 'apiServer:\n  certSANs:\n'
        IFS=, read -r -a items <<<"${CFG[API_CERT_SANS]}"
        for san in "${items[@]}"; do printf '    - "%s"\n' "$san"; done
    fi
    cat <<EOF
---
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
cgroupDriver: systemd
EOF
}

token_exists() {
    local token _ttl _rest
    while read -r token _ttl _rest; do
        if [[ $token == "${CFG[BOOTSTRAP_TOKEN]}" && $_ttl != '<invalid>' ]]; then return 0; fi
    done < <(kubeadm token list --kubeconfig "$ADMIN_CONF" 2>/dev/null)
    return 1
}

ensure_token() { # CONFIG (an InitConfiguration with bootstrapTokens)
    step 'bootstrap token'
    if token_exists; then return 0; fi
    kubeadm token create --config "$1" --kubeconfig "$ADMIN_CONF" >/dev/null
}

# Makes the upstream manifests use POD_CIDR; other manifests stay as they are.
patch_cni() {
    local src=$1 cidr=${CFG[POD_CIDR]}
    case ${CFG[CNI]} in
        flannel)
            if grep -q '"Network":' "$src"; then
                sed -E "s#(\"Network\":[[:space:]]*\")[^\"]*\"#\\1$cidr\"#" "$src"
                return 0
            fi ;;
        calico)
            # Upstream ships "# - name: CALICO_IPV4POOL_CIDR" + "#   value: ..."
            if grep -q 'CALICO_IPV4POOL_CIDR' "$src"; then
                sed -E -e "/^[[:space:]]*# - name: CALICO_IPV4POOL_CIDR[[:space:]]*$/{s/# //;n;s|^([[:space:]]*)#   value:.*$|\\1  value: \"$cidr\"|}" \
                    -e "/^[[:space:]]*- name: CALICO_IPV4POOL_CIDR[[:space:]]*$/{n;s|^([[:space:]]*value:).*$|\\1 \"$cidr\"|}" "$src"
                return 0
            fi ;;
    esac
    log "note: the manifest has no pod CIDR setting of ${CFG[CNI]}: applied unchanged"
    cat "$src"
}

cni_present() {
    case ${CFG[CNI]} in
        calico) kubectl --kubeconfig "$ADMIN_CONF" -n kube-system get daemonset calico-node ;;
        flannel) kubectl --kubeconfig "$ADMIN_CONF" -n kube-flannel get daemonset kube-flannel-ds ;;
    esac >/dev/null 2>&1
}

apply_cni() {
    step 'pod network'
    local src=${CFG[CNI_MANIFEST]} applied=$STATE_DIR/cni-applied.yaml sum
    if [[ $src == /* ]]; then
        [[ -f $src ]] || die 'CNI_MANIFEST names a file that does not exist'
        cp "$src" "$WORK/cni.yaml"
    else
        fetch "$src" "$WORK/cni.yaml"
    fi
    # Pinned by content: a changed upstream file or a tampered mirror is
    # never applied to the cluster.
    sum=$(sha256sum "$WORK/cni.yaml")
    sum=${sum%% *}
    [[ $sum == "${CFG[CNI_SHA256]}" ]] ||
        die "the CNI manifest $src has SHA-256 $sum, expected ${CFG[CNI_SHA256]} (CNI_SHA256): not applied"
    patch_cni "$WORK/cni.yaml" >"$WORK/cni-applied.yaml"
    # The applied copy is kept: the same manifest is not applied twice.
    if [[ -f $applied ]] && cmp -s "$applied" "$WORK/cni-applied.yaml" && cni_present; then
        log 'pod network already applied'
        return 0
    fi
    kubectl --kubeconfig "$ADMIN_CONF" apply -f "$WORK/cni-applied.yaml"
    put_file "$applied" 0644 <"$WORK/cni-applied.yaml"
}

print_ca_hash() {
    step 'CA certificate hash'
    local hash
    # kubeadm pins the SHA-256 of the CA's DER SubjectPublicKeyInfo.
    hash=$(openssl x509 -in /etc/kubernetes/pki/ca.crt -pubkey -noout |
        openssl pkey -pubin -outform der | sha256sum)
    hash=${hash%% *}
    [[ $hash =~ ^[a-f0-9]{64}$ ]] || die 'cannot hash /etc/kubernetes/pki/ca.crt'
    printf 'CA_CERT_HASH=sha256:%s\n' "$hash" >&3
}

role_init() {
    step 'kubeadm version'
    need_cmd kubeadm kubectl openssl curl
    local version certs=() conf=$SECRET_DIR/init.yaml
    version=$(kubeadm version -o short)
    [[ $version == "v${CFG[K8S_VERSION]}."* ]] ||
        die "kubeadm is $version, not ${CFG[K8S_VERSION]}.x (run prepare)"
    step 'kubeadm configuration'
    render_init_config "$version" | write_secret_file init.yaml
    if kubeadm_finished init; then
        log 'control plane already initialized: kubeadm init skipped'
    else
        refuse_half_finished init
        step 'kubeadm init'
        if [[ -n ${CFG[CERTIFICATE_KEY]:-} ]]; then certs=(--upload-certs); fi
        kubeadm init --config "$conf" "${certs[@]}" \
            --skip-token-print --skip-certificate-key-print
        record_kubeadm init
    fi
    step 'API server ready'
    wait_for 'the API server to be ready' api_ready
    ensure_token "$conf"
    apply_cni
    print_ca_hash
}

role_refresh_join() {
    step 'API server ready'
    need_cmd kubeadm kubectl openssl
    [[ -f $ADMIN_CONF ]] || die 'no /etc/kubernetes/admin.conf: run refresh-join on the first master'
    wait_for 'the API server to be ready' api_ready
    local version conf=$SECRET_DIR/join-secrets.yaml
    version=$(kubeadm version -o short)
    render_join_secrets_config 2h0m0s "$version" | write_secret_file join-secrets.yaml
    ensure_token "$conf"
    if [[ -n ${CFG[CERTIFICATE_KEY]:-} ]]; then
        step 'upload certificates'
        # Refreshing is the point: the kubeadm-certs Secret lives 2 h.
        kubeadm init phase upload-certs --upload-certs --skip-certificate-key-print \
            --config "$conf" --kubeconfig "$ADMIN_CONF"
    fi
    if [[ -n ${CFG[CNI]:-} ]]; then apply_cni; fi
    print_ca_hash
}

# --------------------------------------------------------------------- join
render_join_config() {
    cat <<EOF
# $EPHEMERAL
apiVersion: kubeadm.k8s.io/v1beta4
kind: JoinConfiguration
discovery:
  bootstrapToken:
    apiServerEndpoint: "${CFG[CONTROL_PLANE_ENDPOINT]}"
EOF
    printf '    token: "%s"\n' "${CFG[BOOTSTRAP_TOKEN]}"
    cat <<EOF
    caCertHashes:
      - "${CFG[CA_CERT_HASH]}"
nodeRegistration:
  name: ${CFG[NODE_NAME]}
  criSocket: $CRI_SOCKET
  kubeletExtraArgs:
    - name: node-ip
      value: ${CFG[NODE_IP]}
EOF
    if [[ $1 == master ]]; then
        cat <<EOF
controlPlane:
  localAPIEndpoint:
    advertiseAddress: ${CFG[NODE_IP]}
    bindPort: 6443
EOF
        render_certificate_key '  '
    fi
}

local_api_ready() {
    [[ $(curl -fsk --noproxy '*' --max-time 5 "https://${CFG[NODE_IP]}:6443/readyz" 2>/dev/null) == ok ]]
}

role_join() { # master|worker
    step 'kubeadm configuration'
    need_cmd kubeadm curl
    render_join_config "$1" | write_secret_file join.yaml
    if kubeadm_finished join "$1"; then
        log 'node already joined: kubeadm join skipped'
    else
        refuse_half_finished join
        step 'kubeadm join'
        # kubeadm removes it once the kubelet has its certificate; a join
        # that fails before leaves it, with the token: removed at exit.
        SECRET_PATHS+=(/etc/kubernetes/bootstrap-kubelet.conf)
        kubeadm join --config "$SECRET_DIR/join.yaml"
        record_kubeadm join
    fi
    step 'kubelet active'
    wait_for 'the kubelet to be active' systemctl is-active --quiet kubelet
    if [[ $1 == master ]]; then
        step 'local API server ready'
        wait_for 'the local API server to be ready' local_api_ready
    fi
}

# ------------------------------------------------------------------ storage
readonly EXPORTS_FILE=/etc/exports.d/kubernetes-mgmt.exports
# rw: pods write; sync: NFS acknowledges a write once it is on disk (a
# storage-server crash loses nothing acknowledged); no_subtree_check: the
# export is a whole tree, and renames do not break open files;
# no_root_squash: pods running as root keep root's rights on their volume.
readonly EXPORT_OPTIONS='rw,sync,no_subtree_check,no_root_squash'

items() { tr ';' '\n' <<<"$1"; } # VOLUMES/EXPORTS value: one item per line
readonly BY_ID=/dev/disk/by-id

# Exports of ours that /etc/exports has too would be exported twice.
check_export_conflicts() {
    step 'existing exports'
    local dir client
    [[ -f /etc/exports ]] || return 0
    while read -r dir client; do
        if awk -v d="$dir" '!/^[[:space:]]*#/ && $1 == d { f = 1 } END { exit !f }' /etc/exports; then
            die "$dir is also exported in /etc/exports: remove it there (kubernetes-mgmt keeps its exports in $EXPORTS_FILE)"
        fi
    done < <(items "${CFG[EXPORTS]}")
}

# FS_TYPE of DEVICE: "" when the device carries no signature at all.
# Anything else that is not a filesystem (partition table, RAID or LVM
# member) is never formatted: it may hold data.
probe_filesystem() {
    local dev=$1 out rc=0 line usage=''
    FS_TYPE=''
    out=$(blkid -p -o export "$dev") || rc=$?
    (( rc != 2 )) || return 0
    (( rc == 0 )) || die "blkid cannot read $dev (exit $rc)"
    while IFS= read -r line; do
        case $line in
            TYPE=*) FS_TYPE=${line#TYPE=} ;;
            USAGE=*) usage=${line#USAGE=} ;;
            PTTYPE=*) usage=${usage:-partition table} ;;
        esac
    done <<<"$out"
    [[ -n $FS_TYPE && $usage == filesystem ]] ||
        die "$dev holds ${FS_TYPE:-a} ${usage:-signature}, not a filesystem: refusing to format or mount it"
}

# FSTAB with the entries for UUID, DEVICE or MOUNT replaced by one line
# (where the first stood); comments and other entries stay as they are.
fstab_with() { # FSTAB UUID DEVICE MOUNT TYPE
    KM_UUID=UUID=$2 KM_DEV=$3 KM_MNT=$4 KM_LINE="UUID=$2 $4 $5 defaults,nofail 0 2" awk '
        !/^[[:space:]]*#/ && ($1 == ENVIRON["KM_UUID"] || $1 == ENVIRON["KM_DEV"] || $2 == ENVIRON["KM_MNT"]) {
            if (!done) print ENVIRON["KM_LINE"]; done = 1; next }
        { print }
        END { if (!done) print ENVIRON["KM_LINE"] }' "$1"
}

mount_volume() { # DEVICE MOUNT TYPE
    local dev=$1 mnt=$2 where
    mkdir -p "$mnt"
    if mountpoint -q "$mnt"; then
        [[ $(mountpoint -d "$mnt") == "$(mountpoint -x "$dev")" ]] ||
            die "$mnt already has another filesystem mounted"
        return 0
    fi
    where=$(findmnt -n -o TARGET --source "$dev" | head -n 1) || true
    [[ -z $where ]] || die "$dev is already mounted at $where, not at $mnt"
    mount -t "$3" "$dev" "$mnt"
    log "mounted $dev at $mnt"
}

# The names udev gives a disk whose serial is volume ID: virtio keeps
# 20 bytes of it, virtio-scsi and NVMe the id as the hypervisor passed it
# (NVMe serials hold 20 bytes as well).
volume_links() { # DIR ID
    local dir=$1 id=$2 short=${2:0:20} link
    printf '%s\n' "$dir/virtio-$short" "$dir/scsi-0QEMU_QEMU_HARDDISK_$id" \
        "$dir/scsi-0QEMU_QEMU_HARDDISK_$short"
    for link in "$dir"/nvme-*_"$short" "$dir"/nvme-*_"$id"; do
        [[ ! -e $link ]] || printf '%s\n' "$link"
    done
}

# VOLUME_DEV: the one block device whose by-id name carries volume ID and
# whose size is GIB GiB. Anything else is an error that names what was
# found; nothing is formatted then.
find_volume() { # DIR ID GIB HINT
    local dir=$1 id=$2 gib=$3 hint=$4 link dev bytes seen='' found=()
    local -A devs=()
    while IFS= read -r link; do
        [[ -e $link ]] || continue
        dev=$(readlink -f -- "$link")
        [[ -b $dev ]] || die "volume $id: $link leads to $dev, not a block device: refusing to use it"
        [[ -v "devs[$dev]" ]] || found+=("$dev")
        devs[$dev]=1
    done < <(volume_links "$dir" "$id")
    if (( ${#found[@]} == 0 )); then
        [[ -d $dir ]] && seen=$(find "$dir" -mindepth 1 -maxdepth 1 -printf '%f ' 2>/dev/null)
        die "volume $id: no disk with this id under $dir (found: ${seen:-nothing}; Nova reports $hint$([[ -b $hint ]] && echo ', a disk whose identity cannot be confirmed' || echo ', absent')): nothing was formatted"
    fi
    (( ${#found[@]} == 1 )) || die "volume $id: several disks carry its id (${found[*]}): nothing was formatted"
    dev=${found[0]}
    bytes=$(blockdev --getsize64 "$dev") || die "volume $id: cannot read the size of $dev"
    (( bytes == gib * 1073741824 )) ||
        die "volume $id: $dev has $bytes bytes, but Cinder's volume has $gib GiB ($((gib * 1073741824)) bytes): not this volume; nothing was formatted"
    [[ $dev == "$hint" ]] || log "volume $id is $dev (Nova reports $hint)"
    VOLUME_DEV=$dev
}

setup_volumes() {
    local id gib hint dev mnt uuid
    [[ -f /etc/fstab ]] || : >/etc/fstab
    while read -r id gib hint mnt; do
        step "volume $id"
        find_volume "$BY_ID" "$id" "$gib" "$hint"
        dev=$VOLUME_DEV
        probe_filesystem "$dev"
        if [[ -z $FS_TYPE ]]; then
            log "$dev has no filesystem: making ext4"
            mkfs.ext4 -q "$dev"
            FS_TYPE=ext4
        fi
        uuid=$(blkid -p -o value -s UUID "$dev")
        [[ -n $uuid ]] || die "$dev has no filesystem UUID"
        fstab_with /etc/fstab "$uuid" "$dev" "$mnt" "$FS_TYPE" | put_file /etc/fstab 0644
        mount_volume "$dev" "$mnt" "$FS_TYPE"
    done < <(items "${CFG[VOLUMES]}")
}

install_nfs_server() {
    step 'NFS server package'
    read_pkg_versions nfs-kernel-server
    if ! pkg_installed nfs-kernel-server; then
        apt_get update
        apt_get install nfs-kernel-server
    fi
    need_cmd exportfs
}

# One line per directory, its clients in the order given.
render_exports() {
    local dir client order=()
    local -A clients=()
    printf '# %s\n' "$MANAGED"
    while read -r dir client; do
        [[ -v "clients[$dir]" ]] || order+=("$dir")
        [[ ${clients[$dir]:-} == *" $client("* ]] || clients[$dir]+=" $client($EXPORT_OPTIONS)"
    done < <(items "${CFG[EXPORTS]}")
    for dir in "${order[@]}"; do printf '%s%s\n' "$dir" "${clients[$dir]}"; done
}

setup_exports() {
    local dir client
    step 'export directories'
    while read -r dir client; do
        [[ ! -d $dir ]] || continue
        # Writable for pods of any uid; an existing directory keeps its mode.
        mkdir -p "$dir"
        chmod 0777 "$dir"
        log "created $dir"
    done < <(items "${CFG[EXPORTS]}")
    step 'exports'
    render_exports | put_file "$EXPORTS_FILE" 0644
}

start_nfs_server() {
    step 'NFS server'
    if ! systemctl is-enabled --quiet nfs-server; then systemctl enable nfs-server; fi
    if ! systemctl is-active --quiet nfs-server; then systemctl start nfs-server; fi
    exportfs -ra
}

verify_exports() {
    step 'verify exports'
    local active dir client
    active=$(exportfs -s)
    while read -r dir client; do
        awk -v d="$dir" -v c="$client(" '$1 == d && index($2, c) == 1 { f = 1 } END { exit !f }' <<<"$active" ||
            die "$dir is not exported to $client after exportfs -ra"
    done < <(items "${CFG[EXPORTS]}")
}

role_storage() {
    check_os /etc/os-release
    check_export_conflicts
    setup_volumes
    step 'apt proxy'
    apt_proxy
    install_nfs_server
    setup_exports
    start_nfs_server
    verify_exports
}

# ------------------------------------------------------------------ resume
# What a node has, judged by facts: the driver reads them (status) before
# it acts, and recovers a half-finished kubeadm run (reset) before retrying.
readonly DONE_DIR=$STATE_DIR/done
readonly KUBEADM_FILES=(kubelet.conf bootstrap-kubelet.conf admin.conf
    super-admin.conf manifests/kube-apiserver.yaml manifests/etcd.yaml pki/ca.crt)

record_done() { # the role's completion record: always its last step
    printf 'CONTRACT_VERSION=%s\n' "$CONTRACT_VERSION" | put_file "$DONE_DIR/$ROLE" 0644
}

record_kubeadm() { # init|join: kubeadm exited 0
    printf 'CONTRACT_VERSION=%s\n' "$CONTRACT_VERSION" | put_file "$DONE_DIR/kubeadm-$1" 0644
}

kubeadm_files() { # the files kubeadm writes on this node, present now
    local f
    for f in "${KUBEADM_FILES[@]}"; do
        if [[ -e /etc/kubernetes/$f ]]; then printf '%s\n' "$f"; fi
    done
}

node_registered() { # KUBECONFIG: this node's Node object exists
    kubectl --kubeconfig "$1" get node "${CFG[NODE_NAME]}" >/dev/null 2>&1
}

# kubeadm STEP finished here: its record, or (for nodes set up before
# records existed) a serving API server that has this node registered.
kubeadm_finished() { # init | join master|worker
    [[ -f $DONE_DIR/kubeadm-$1 ]] && return 0
    case $1 in
        init) [[ -f $ADMIN_CONF ]] && api_ready && node_registered "$ADMIN_CONF" ;;
        join) [[ -f /etc/kubernetes/kubelet.conf ]] &&
            node_registered /etc/kubernetes/kubelet.conf &&
            { [[ $2 == worker ]] || local_api_ready; } ;;
    esac
}

refuse_half_finished() { # init|join
    local left
    left=$(kubeadm_files | paste -sd, -)
    [[ -z $left ]] ||
        die "a half-finished kubeadm $1 left $left in /etc/kubernetes: run the reset role first"
}

role_status() {
    step 'facts'
    print_facts
}

print_facts() {
    local f name line version files api=0
    printf 'CONTRACT_VERSION=%s\n' "$CONTRACT_VERSION" >&3
    if [[ -d $DONE_DIR ]]; then
        for f in "$DONE_DIR"/*; do
            [[ -f $f ]] || continue
            name=${f##*/} name=${name^^} version=''
            while IFS= read -r line || [[ -n $line ]]; do
                if [[ $line =~ ^CONTRACT_VERSION=([0-9]*)$ ]]; then version=${BASH_REMATCH[1]}; fi
            done <"$f"
            printf 'DONE_%s=%s\n' "${name//-/_}" "$version" >&3
        done
    fi
    files=$(kubeadm_files | paste -sd, -)
    if [[ -f $ADMIN_CONF ]] && command -v kubectl >/dev/null && api_ready; then api=1; fi
    printf 'KUBEADM_FILES=%s\nAPI_READY=%s\n' "$files" "$api" >&3
}

role_reset() {
    step 'kubeadm reset'
    if command -v kubeadm >/dev/null; then
        kubeadm reset -f --cri-socket "$CRI_SOCKET"
    fi
    rm -f "$DONE_DIR/kubeadm-init" "$DONE_DIR/kubeadm-join" "$DONE_DIR/init" \
        "$DONE_DIR/join-master" "$DONE_DIR/join-worker" "$DONE_DIR/refresh-join" \
        "$STATE_DIR/cni-applied.yaml"
}

# ------------------------------------------------------------------ upgrade
# upgrade_packages MINOR PACKAGE...: each PACKAGE at the newest MINOR.x the
# repository has, held there; nothing is fetched when all already are.
upgrade_packages() {
    local minor=$1 p want=() prefix
    shift
    step "$* $minor"
    prefix=$(k8s_prefix "$minor")
    read_pkg_versions "$@"
    for p in "$@"; do pkg_installed "$p" "$prefix" || want+=("$p=$prefix*"); done
    if (( ${#want[@]} )); then
        apt_get update
        apt_get --allow-change-held-packages install "${want[@]}"
        read_pkg_versions "$@"
    fi
    for p in "$@"; do
        pkg_installed "$p" "$prefix" || die "$p $prefix* is not installable from the repository"
    done
    apt-mark hold "$@" >/dev/null
}

# The node's own part of an in-place upgrade to the minor K8S_VERSION, in
# kubeadm's order; the driver drained the node first. Packages already at
# the new minor are kept, and kubeadm leaves unchanged static pods alone,
# so a retry finishes what an interrupted run began. A failed "kubeadm
# upgrade" rolls its static pods back: the node's control plane stays on
# its old version, and so does its kubelet (upgraded after kubeadm only).
role_upgrade() {
    local minor=${CFG[K8S_VERSION]} target
    need_cmd curl gpg kubeadm
    APT_CHANGED=0
    setup_apt_repo
    upgrade_packages "$minor" kubeadm
    target=$(kubeadm version -o short)
    [[ $target == "v$minor."* ]] || die "kubeadm reports $target after its upgrade to $minor"
    import_image_bundle
    step "kubeadm upgrade ${CFG[UPGRADE]} $target"
    if [[ ${CFG[UPGRADE]} == apply ]]; then
        kubeadm upgrade apply --yes "$target"
    else
        kubeadm upgrade node
    fi
    upgrade_packages "$minor" kubelet kubectl
    step 'kubelet restart'
    # Always: a run that upgraded the package may have stopped before.
    systemctl daemon-reload
    systemctl restart kubelet
    wait_for 'kubelet to be active' systemctl is-active --quiet kubelet
    printf 'KUBERNETES_VERSION=%s\n' "$target" >&3
}

# --------------------------------------------------------------------- main
main() {
    exec 3>&1 1>&2      # stdout carries results only (fd 3)
    if [[ $# == 1 && $1 == --contract-version ]]; then
        printf '%s\n' "$CONTRACT_VERSION" >&3
        return 0
    fi
    (( $# == 2 )) || die 'usage: install_k8s_cluster.sh ROLE CONFIG'
    case $1 in
        prepare | lb | init | join-master | join-worker | refresh-join | hosts | storage | status | reset | upgrade) ROLE=$1 ;;
        *) die 'unknown role: prepare, lb, init, join-master, join-worker, refresh-join, hosts, storage, status, reset or upgrade' ;;
    esac
    STEP=config
    read_config "$2"
    validate_config
    exec 4>&2
    exec 2> >(redact_stream >&4) 1>&2 4>&-
    (( EUID == 0 )) || die 'must run as root'
    [[ -d $STATE_DIR ]] || mkdir -p "$STATE_DIR"
    exec 9>"$STATE_DIR/install.lock"
    flock -w "$DEADLINE" 9 || die 'another install_k8s_cluster.sh run holds the lock'
    WORK=$(mktemp -d)
    clear_secrets_left_behind
    case $ROLE in
        prepare) role_prepare ;;
        lb) role_lb ;;
        init) role_init ;;
        refresh-join) role_refresh_join ;;
        join-master) role_join master ;;
        join-worker) role_join worker ;;
        hosts) role_hosts ;;
        storage) role_storage ;;
        status) role_status ;;
        reset) role_reset ;;
        upgrade) role_upgrade ;;
    esac
    STEP=finish
    if [[ $ROLE != status && $ROLE != reset ]]; then record_done; fi
    if [[ $ROLE == prepare ]]; then print_facts; fi
    log 'done'
}

# Sourced (unit tests of the functions), nothing runs.
if [[ ${BASH_SOURCE[0]} == "$0" ]]; then main "$@"; fi
