#!/usr/bin/env bash
# Checks a vmpool install, as knative/README.md installs it, and says what is wrong in plain words.
#
#   knative/verify.sh [--controller] [--pool NAMESPACE/NAME] [--wait SECONDS]
#
#   --controller     check everything the APIService step needs, not the APIService itself: run it
#                    before `kubectl apply -k knative/overlays/<tls>/apiservice`
#   --pool NS/NAME   also check that this pool has converged (status caught up, every replica ready)
#   --wait SECONDS   repeat the checks until they all pass or SECONDS have passed
#
# Needs bash and kubectl (its current context is the cluster checked); reads only, except one
# server-side dry-run create of a pool, which runs the admission webhook and stores nothing.
# Exit status: 0 when every check passes, 1 when something is wrong, 2 for a usage error.
set -uo pipefail

NS=vmpool-system
APISERVICE=v1alpha2.subresources.virtualization.deckhouse.io
POOL_CRD=virtualmachinepools.virtualization.deckhouse.io
MIN_K8S_MINOR=26 # Knative 1.12 refuses older clusters
MIN_KNATIVE_MINOR=12 # Trigger `filters` are on by default from Eventing 1.12

controller_only=false
pool=""
wait_s=0
while [ $# -gt 0 ]; do
  case "$1" in
    --controller) controller_only=true ;;
    --pool)
      pool=${2:-}
      shift
      ;;
    --wait)
      wait_s=${2:-}
      shift
      ;;
    -h | --help)
      sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'
      exit 0
      ;;
    *)
      echo "unknown argument $1 (see --help)" >&2
      exit 2
      ;;
  esac
  shift
done
if [ -n "$pool" ] && [[ ! "$pool" =~ ^[a-z0-9.-]+/[a-z0-9.-]+$ ]]; then
  echo "--pool wants NAMESPACE/NAME, got '$pool'" >&2
  exit 2
fi
if ! [[ "$wait_s" =~ ^[0-9]+$ ]]; then
  echo "--wait wants a number of seconds, got '$wait_s'" >&2
  exit 2
fi
if ! command -v kubectl >/dev/null; then
  echo "kubectl is not on PATH" >&2
  exit 2
fi

out=""
problems=0
section() { out+=$'\n'"$1"$'\n'; }
ok() { out+="  ok    $1"$'\n'; }
note() { out+="  note  $1"$'\n'; }
fail() {
  out+="  FAIL  $1"$'\n'
  problems=$((problems + 1))
}

# get KIND NAME NAMESPACE JSONPATH: prints the value, or nothing when the object does not exist.
get() {
  local in=()
  [ -n "$3" ] && in=(-n "$3")
  kubectl get "$1" "$2" ${in[@]+"${in[@]}"} -o "jsonpath=$4" 2>/dev/null
}
exists() {
  local in=()
  [ -n "$3" ] && in=(-n "$3")
  kubectl get "$1" "$2" ${in[@]+"${in[@]}"} -o name >/dev/null 2>&1
}

# ready WHAT KIND NAME NAMESPACE CONDITION CONTROLLER: a condition that must be True (one request).
ready() {
  local what=$1 kind=$2 name=$3 ns=$4 type=$5 controller=$6 args=() line
  [ -n "$ns" ] && args=(-n "$ns")
  local c="{.status.conditions[?(@.type==\"$type\")]"
  if ! line=$(kubectl get "$kind" "$name" ${args[@]+"${args[@]}"} -o "jsonpath=${c}.status}{\"\n\"}${c}.reason}{\"\n\"}${c}.message}" 2>&1); then
    if [[ "$line" == *NotFound* || "$line" == *"not found"* ]]; then
      fail "$what: not found (was the install step applied?)"
    else
      fail "$what: cannot read it: $line"
    fi
    return
  fi
  local status reason message
  # One field per line: empty ones (no reason) keep their place.
  {
    read -r status
    read -r reason
    IFS= read -r message
  } <<<"$line"
  if [ "$status" = True ]; then
    ok "$what: $type"
  elif [ -z "$status" ]; then
    fail "$what: no $type condition yet: nothing has reconciled it (is $controller running?)"
  else
    fail "$what: $type=$status${reason:+ ($reason)}${message:+: $message}"
  fi
}

# deployment NAMESPACE NAME WHAT: at least one replica available (one request).
deployment() {
  local ns=$1 name=$2 what=$3 line want have
  if ! line=$(kubectl get deployment "$name" -n "$ns" -o 'jsonpath={.spec.replicas} {.status.availableReplicas}' 2>/dev/null); then
    fail "$what: deployment $ns/$name not found"
    return 1
  fi
  read -r want have <<<"$line"
  have=${have:-0}
  if [ "$have" -ge 1 ]; then
    ok "$what: deployment $ns/$name has $have of ${want:-1} replicas available"
    return 0
  fi
  fail "$what: deployment $ns/$name has 0 of ${want:-1} replicas available (kubectl -n $ns describe deployment $name)"
  return 1
}

# components WHAT NAMESPACE DEPLOYMENT...: a system component is up when each of its Deployments has
# an available replica; one line for the whole component.
components() {
  local what=$1 ns=$2 missing="" down="" d have listed
  shift 2
  # One request per namespace: name=available of every Deployment.
  listed=$(kubectl get deployments -n "$ns" \
    -o 'jsonpath={range .items[*]}{.metadata.name}={.status.availableReplicas}{"\n"}{end}' 2>/dev/null)
  for d in "$@"; do
    if ! grep -q "^$d=" <<<"$listed"; then
      missing+=" $d"
      continue
    fi
    have=$(grep "^$d=" <<<"$listed" | cut -d= -f2)
    [ "${have:-0}" -ge 1 ] || down+=" $d"
  done
  if [ -n "$missing" ]; then
    fail "$what: deployment(s)${missing} not found in namespace $ns: not installed? (see Prerequisites)"
  elif [ -n "$down" ]; then
    fail "$what: deployment(s)${down} in namespace $ns have no available replica (kubectl -n $ns get pods)"
  else
    ok "$what: running"
  fi
}

# minor VERSION: the minor number of 1.26.3, v1.26.3 or 26+; empty when it is not a version.
minor() {
  local v=${1#v}
  if [[ "$v" =~ ^1\.([0-9]+) ]]; then echo "${BASH_REMATCH[1]}"; fi
}

check_prerequisites() {
  section "prerequisites"
  local version
  if ! version=$(kubectl get --raw /version 2>&1); then
    fail "cannot reach the cluster: $version"
    return 1
  fi
  local git m
  git=$(sed -n 's/.*"gitVersion": *"\([^"]*\)".*/\1/p' <<<"$version" | head -1)
  m=$(minor "$git")
  if [ -z "$m" ]; then
    note "Kubernetes version '$git' not understood; vmpool needs 1.$MIN_K8S_MINOR or later"
  elif [ "$m" -lt "$MIN_K8S_MINOR" ]; then
    fail "Kubernetes $git: vmpool needs 1.$MIN_K8S_MINOR or later"
  else
    ok "Kubernetes $git"
  fi

  local crd crds knative=(services.serving.knative.dev apiserversources.sources.knative.dev
    pingsources.sources.knative.dev brokers.eventing.knative.dev triggers.eventing.knative.dev)
  local platform=(virtualmachines.virtualization.deckhouse.io virtualdisks.virtualization.deckhouse.io)
  crds=$(kubectl get crd --ignore-not-found -o name "${knative[@]}" "${platform[@]}" 2>/dev/null)
  for crd in "${knative[@]}"; do
    grep -qx "customresourcedefinition.apiextensions.k8s.io/$crd" <<<"$crds" ||
      fail "CRD $crd missing: install Knative Serving and Eventing (see Prerequisites)"
  done
  for crd in "${platform[@]}"; do
    grep -qx "customresourcedefinition.apiextensions.k8s.io/$crd" <<<"$crds" ||
      fail "CRD $crd missing: the virtualization platform is not installed"
  done

  components "Knative Serving" knative-serving controller activator autoscaler webhook
  components "Knative Eventing (with the MT channel-based Broker)" knative-eventing \
    eventing-controller eventing-webhook mt-broker-controller mt-broker-filter mt-broker-ingress
  local label="{.metadata.labels.app\.kubernetes\.io/version}" what ns name v
  for what in "Knative Serving:knative-serving/controller" "Knative Eventing:knative-eventing/eventing-controller"; do
    ns=${what#*:}
    name=${ns#*/}
    ns=${ns%/*}
    v=$(get deployment "$name" "$ns" "$label")
    m=$(minor "$v")
    if [ -n "$m" ] && [ "$m" -lt "$MIN_KNATIVE_MINOR" ]; then
      fail "${what%%:*} $v: vmpool needs 1.$MIN_KNATIVE_MINOR or later"
    elif [ -n "$m" ]; then
      ok "${what%%:*} $v"
    fi
  done
  # The MT channel-based Broker needs a channel implementation; its default is named here.
  local template
  template=$(get configmap config-br-default-channel knative-eventing '{.data.channel-template-spec}')
  if [ -z "$template" ]; then
    fail "the MT channel-based Broker has no default channel (configmap knative-eventing/config-br-default-channel): install a channel, e.g. in-memory-channel.yaml"
  elif grep -q 'kind: *InMemoryChannel' <<<"$template"; then
    components "InMemoryChannel (the Broker's channel)" knative-eventing imc-controller imc-dispatcher
  else
    ok "Broker channel: $(grep 'kind:' <<<"$template" | head -1 | sed 's/^ *//')"
  fi

  local pool_crd established intent
  if ! pool_crd=$(kubectl get crd "$POOL_CRD" -o 'jsonpath={.status.conditions[?(@.type=="Established")].status} {.spec.versions[?(@.name=="v1alpha2")].schema.openAPIV3Schema.properties.status.properties.intent.type}' 2>/dev/null); then
    fail "CRD $POOL_CRD missing: step 1 of the install (kubectl apply --server-side --field-manager=vmpool -k knative/crd)"
  else
    read -r established intent <<<"$pool_crd"
    if [ "$established" != True ]; then
      fail "CRD $POOL_CRD is not Established yet"
    elif [ "$intent" != object ]; then
      fail "CRD $POOL_CRD is not vmpool's (its status has no intent field, which vmpool records before every create and delete): do not run vmpool against it"
    else
      ok "CRD $POOL_CRD (vmpool's)"
    fi
  fi
  check_platform_pool_controller
}

# The platform's own pool controller registers its pool webhook only while it runs (its
# VirtualMachinePool feature gate); two controllers on one pool would both create replicas.
check_platform_pool_controller() {
  local hooks
  hooks=$(kubectl get validatingwebhookconfigurations -o 'jsonpath={range .items[*]}{range .webhooks[*]}{.name}{"\n"}{end}{end}' 2>/dev/null)
  if grep -qx 'vmpool.virtualization-controller.validate.d8-virtualization' <<<"$hooks"; then
    fail "the virtualization platform's own pool controller is running (its webhook vmpool.virtualization-controller.validate.d8-virtualization is registered): it and vmpool would both manage every pool. vmpool cannot run beside it (README, \"Where the platform ships its own pool\")"
  fi
}

check_controller() {
  section "controller (namespace $NS)"
  if ! exists namespace "$NS" ""; then
    fail "namespace $NS not found: apply your overlay (kubectl apply --server-side --field-manager=vmpool -k knative/overlays/<yours>)"
    return 1
  fi
  # Images: the base's placeholder `vmpool` and the example's zero digest cannot be pulled.
  local images bad=""
  images=$(kubectl get deployments,services.serving.knative.dev -n "$NS" \
    -l app.kubernetes.io/part-of=vmpool \
    -o 'jsonpath={range .items[*]}{range .spec.template.spec.containers[*]}{.image}{"\n"}{end}{end}' 2>/dev/null | sort -u)
  local image
  while read -r image; do
    [ -z "$image" ] && continue
    case "$image" in
      vmpool | vmpool:* | *@sha256:0000000000000000000000000000000000000000000000000000000000000000)
        bad+=" $image"
        ;;
      *@sha256:*) ;;
      *) note "image $image is not pinned by digest: a tag can move under you" ;;
    esac
  done <<<"$images"
  if [ -n "$bad" ]; then
    fail "placeholder image${bad}: set your build by digest in your overlay (README, \"Build and push the image\")"
  elif [ -n "$images" ]; then
    ok "images set: $(tr '\n' ' ' <<<"$images")"
  fi

  # Serving certificate.
  if exists certificates.cert-manager.io vmpool-serving "$NS"; then
    ready "Certificate $NS/vmpool-serving" certificates.cert-manager.io vmpool-serving "$NS" Ready cert-manager
  fi
  local keys
  if ! keys=$(kubectl get secret vmpool-tls -n "$NS" \
    -o 'jsonpath={.data.tls\.crt}{" "}{.data.tls\.key}' 2>/dev/null); then
    fail "Secret $NS/vmpool-tls not found: with cert-manager it appears once the Certificate is issued; with plain TLS, overlays/plain-tls/certs holds the files"
  elif ! read -r -a keys <<<"$keys" || [ "${#keys[@]}" -lt 2 ]; then
    fail "Secret $NS/vmpool-tls has no tls.crt or no tls.key"
  else
    ok "Secret $NS/vmpool-tls"
  fi

  # The HTTPS Deployments the API server calls.
  deployment "$NS" scale-validate "scale-validate"
  deployment "$NS" scale-down-with "scale-down-with"

  # The webhook: a caBundle on every entry, then a dry-run pool create that runs it.
  local hook=vmpool-scale-validate entries
  # One line per webhook entry: x, then its caBundle (empty when unset).
  if ! entries=$(kubectl get validatingwebhookconfiguration "$hook" \
    -o 'jsonpath={range .webhooks[*]}x{.clientConfig.caBundle}{"\n"}{end}' 2>/dev/null); then
    fail "ValidatingWebhookConfiguration $hook not found"
  else
    local n bundles
    n=$(grep -c . <<<"$entries")
    bundles=$(grep -c '^x.' <<<"$entries")
    if [ "$bundles" -lt "$n" ]; then
      fail "ValidatingWebhookConfiguration $hook: $((n - bundles)) of $n webhooks have no caBundle (cert-manager's cainjector, or overlays/plain-tls, sets it)"
    else
      ok "ValidatingWebhookConfiguration $hook: caBundle set"
    fi
    local answer
    answer=$(kubectl create --dry-run=server -o name -f - 2>&1 <<EOF
apiVersion: virtualization.deckhouse.io/v1alpha2
kind: VirtualMachinePool
metadata: {name: vmpool-verify, namespace: $NS}
spec:
  replicas: 0
  scaleDownPolicy: NewestFirst
  virtualMachineTemplate:
    spec:
      virtualMachineClassName: generic
      cpu: {cores: 1}
      memory: {size: 1Gi}
      blockDeviceRefs: [{kind: VirtualDisk, name: root}]
  virtualDiskTemplates:
    - name: root
      spec: {persistentVolumeClaim: {size: 1Gi}}
EOF
    )
    if [[ "$answer" == *"failed calling webhook"* ]]; then
      fail "the admission webhook does not answer, so every pool write is refused (are scale-validate's pods ready, is vmpool-tls the certificate the caBundle trusts?): ${answer#*failed calling webhook }"
    elif [[ "$answer" == *"denied the request"* ]]; then
      ok "the admission webhook answers (it refused the probe pool: ${answer#*denied the request: })"
    elif [[ "$answer" == *virtualmachinepool* ]]; then
      ok "the admission webhook answers (dry-run create of a pool accepted)"
    else
      fail "dry-run create of a pool failed: $answer"
    fi
  fi

  # Knative objects: their controllers set Ready.
  local ksvc
  for ksvc in reconcile-pool disk-gc-tick vmpool-dead-letter; do
    ready "Knative Service $NS/$ksvc" services.serving.knative.dev "$ksvc" "$NS" Ready "Knative Serving"
  done
  ready "Broker $NS/vmpool" brokers.eventing.knative.dev vmpool "$NS" Ready "Knative Eventing"
  ready "ApiServerSource $NS/vmpool" apiserversources.sources.knative.dev vmpool "$NS" Ready "Knative Eventing"
  check_adapter_watches
  check_event_policies
  local ping
  for ping in vmpool-resync vmpool-disk-gc; do
    ready "PingSource $NS/$ping" pingsources.sources.knative.dev "$ping" "$NS" Ready "Knative Eventing"
  done
  local trigger
  for trigger in reconcile-pool-watch reconcile-pool-resync disk-gc-tick; do
    ready "Trigger $NS/$trigger" triggers.eventing.knative.dev "$trigger" "$NS" Ready "Knative Eventing"
  done
}

# Knative Eventing's sender identity against the EventPolicies installed: with
# `authentication-oidc` off, Knative marks every EventPolicy not Ready (AuthenticationEnabled=False,
# knative/eventing pkg/reconciler/eventpolicy/eventpolicy.go), a Broker with an unready policy is not
# Ready (pkg/auth/event_policy.go) and its Triggers deliver nothing (pkg/reconciler/broker/trigger).
check_event_policies() {
  local features oidc mode policies
  features=$(get configmap config-features knative-eventing '{.data.authentication-oidc}/{.data.default-authorization-mode}')
  oidc=${features%%/*}
  mode=${features#*/}
  # Knative's defaults where the ConfigMap or a key is missing.
  oidc=${oidc:-disabled}
  mode=${mode:-allow-same-namespace}
  policies=$(kubectl get eventpolicies.eventing.knative.dev -n "$NS" -o 'jsonpath={range .items[*]}{.metadata.name}{" "}{end}' 2>/dev/null)
  policies=${policies% }
  local events=false
  if exists triggers.eventing.knative.dev vmpool-scaledownwith "$NS" || [[ " $policies " == *" vmpool-broker "* ]]; then
    events=true
  fi
  if [ "$oidc" != enabled ]; then
    if [ "$events" = true ]; then
      fail "the scaledownwith-events component is applied while authentication-oidc is off (knative-eventing/config-features): it needs Eventing's sender identity; enable it (README, \"scaledownwith as a CloudEvent\") or take the component out of your overlay"
    fi
    if [ -n "$policies" ]; then
      fail "EventPolicies $policies in $NS while authentication-oidc is off (knative-eventing/config-features): Knative marks them not Ready, so Broker $NS/vmpool is not Ready and no event reaches any function. Take ../oidc and ../scaledownwith-events out of your overlay and run: kubectl -n $NS delete eventpolicy $policies; or enable authentication-oidc"
    else
      ok "Eventing sender identity off: no EventPolicy in $NS (events are not authenticated; the NetworkPolicies keep other pods away)"
    fi
    return
  fi
  local p missing=""
  for p in vmpool-ticks vmpool-watch; do
    [[ " $policies " == *" $p "* ]] || missing+=" $p"
  done
  if [ -z "$missing" ]; then
    ok "Eventing sender identity on: EventPolicies admit vmpool's sources into Broker $NS/vmpool"
  elif [ "$mode" = deny-all ] || [ "$events" = true ]; then
    fail "EventPolicy${missing} missing while authentication-oidc is on$([ "$mode" = deny-all ] && echo ' with default-authorization-mode deny-all')$([ "$events" = true ] && echo ' and the scaledownwith-events policy applies'): the Broker refuses vmpool's own ticks and watch events (403). Add the component ../oidc to your overlay and apply it again"
  else
    note "Eventing sender identity on, EventPolicy${missing} missing: any sender in $NS may post into the Broker (default-authorization-mode $mode); add the component ../oidc to admit only vmpool's sources"
  fi
}

# The ApiServerSource adapter looks its resources up once, when it starts: one whose group/version
# is served but whose CRD does not exist yet is skipped with "it doesn't exist. skipping..." and
# never watched, while the adapter stays Ready (knative/eventing pkg/adapter/apiserver/adapter.go,
# startResilient). So every CRD it watches must be older than the adapter's container.
check_adapter_watches() {
  local pods started
  pods=$(kubectl get pods -n "$NS" -l eventing.knative.dev/sourceName=vmpool \
    -o 'jsonpath={range .items[*]}{range .status.containerStatuses[?(@.name=="receive-adapter")]}{.state.running.startedAt}{"\n"}{end}{end}' 2>/dev/null)
  started=$(grep . <<<"$pods" | sort | head -1)
  if [ -z "$started" ]; then
    note "no running ApiServerSource adapter pod in $NS (label eventing.knative.dev/sourceName=vmpool): cannot check what it watches"
    return
  fi
  local crd created late=""
  for crd in "$POOL_CRD" virtualmachines.virtualization.deckhouse.io virtualdisks.virtualization.deckhouse.io; do
    created=$(get crd "$crd" "" '{.metadata.creationTimestamp}')
    # RFC 3339 times in UTC compare as strings.
    if [ -n "$created" ] && [[ "$created" > "$started" ]]; then late+=" $crd"; fi
  done
  if [ -n "$late" ]; then
    fail "the ApiServerSource adapter started ($started) before CRD(s)${late} existed: Knative's adapter skips a resource it cannot find at start and never watches it. Restart it: kubectl -n $NS rollout restart deployment -l eventing.knative.dev/sourceName=vmpool"
  else
    ok "the ApiServerSource adapter started after the pool, VM and disk CRDs: it watches all three"
  fi
}

check_apiservice() {
  section "aggregated API (scaledownwith)"
  # With the own-group component scale-down-with serves vmpool's own group: check that APIService.
  local group
  group=$(get deployment scale-down-with "$NS" '{.spec.template.spec.containers[0].env[?(@.name=="SCALEDOWNWITH_GROUP")].value}')
  local step=knative/overlays/\<tls\>/apiservice
  if [ -n "$group" ]; then
    APISERVICE="v1alpha2.$group"
    step=knative/overlays/own-group/\<tls\>/apiservice
  fi
  if ! exists apiservice "$APISERVICE" ""; then
    if [ "$controller_only" = true ]; then
      ok "APIService $APISERVICE not registered yet: next step, kubectl apply --server-side --field-manager=vmpool -k $step"
    else
      fail "APIService $APISERVICE not registered: once \`$0 --controller\` passes, kubectl apply --server-side --field-manager=vmpool -k $step"
    fi
    return
  fi
  local backend
  backend=$(get apiservice "$APISERVICE" "" '{.spec.service.namespace}/{.spec.service.name}')
  if [ "$backend" != "$NS/scale-down-with" ]; then
    fail "APIService $APISERVICE is served by ${backend:-no service (built in)}, not $NS/scale-down-with: another component owns this group; do not apply vmpool's APIService over it"
    return
  fi
  [ "$controller_only" = true ] && return
  if [ -z "$(get apiservice "$APISERVICE" "" '{.spec.caBundle}')" ]; then
    fail "APIService $APISERVICE has no caBundle (cert-manager's cainjector, or overlays/plain-tls/apiservice, sets it)"
  fi
  ready "APIService $APISERVICE" apiservice "$APISERVICE" "" Available "kube-apiserver's aggregator"
}

check_pool() {
  section "pool $pool"
  local ns=${pool%/*} name=${pool#*/}
  if ! exists virtualmachinepools.virtualization.deckhouse.io "$name" "$ns"; then
    fail "pool $pool not found"
    return
  fi
  local f=virtualmachinepools.virtualization.deckhouse.io gen seen want have rdy
  gen=$(get "$f" "$name" "$ns" '{.metadata.generation}')
  seen=$(get "$f" "$name" "$ns" '{.status.observedGeneration}')
  want=$(get "$f" "$name" "$ns" '{.spec.replicas}')
  have=$(get "$f" "$name" "$ns" '{.status.replicas}')
  rdy=$(get "$f" "$name" "$ns" '{.status.readyReplicas}')
  if [ -z "$seen" ]; then
    fail "pool $pool has no status: reconcile-pool has not reconciled it (are events arriving? see the checks above)"
  elif [ "$seen" != "$gen" ]; then
    fail "pool $pool: status is for generation $seen, the spec is at $gen: reconcile-pool has not caught up"
  elif [ "${have:-0}" != "${want:-1}" ] || [ "${rdy:-0}" != "${want:-1}" ]; then
    fail "pool $pool: ${have:-0} replicas, ${rdy:-0} ready, ${want:-1} wanted (kubectl get vm -n $ns -l vmpool.virtualization.deckhouse.io/pool=$name)"
  else
    ok "pool $pool: ${rdy} of ${want} replicas ready, status at generation $gen"
  fi
  local status message
  status=$(get "$f" "$name" "$ns" '{.status.conditions[?(@.type=="Available")].status}')
  message=$(get "$f" "$name" "$ns" '{.status.conditions[?(@.type=="Available")].message}')
  if [ -n "$seen" ] && [ "$status" != True ]; then
    fail "pool $pool: Available=${status:-unset}${message:+: $message}"
  fi
}

run_checks() {
  out=""
  problems=0
  check_prerequisites
  check_controller
  check_apiservice
  if [ -n "$pool" ]; then check_pool; fi
}

deadline=$((SECONDS + wait_s))
while true; do
  run_checks
  if [ "$problems" -eq 0 ] || [ "$SECONDS" -ge "$deadline" ]; then break; fi
  echo "$problems problem(s); checking again in 5 s ($((deadline - SECONDS)) s left)"
  sleep 5
done

printf 'vmpool verify%s (context %s)\n' "$([ "$controller_only" = true ] && echo ' --controller')" \
  "$(kubectl config current-context 2>/dev/null || echo unknown)"
printf '%s' "$out"
if [ "$problems" -eq 0 ]; then
  echo $'\n'"all checks passed"
  exit 0
fi
echo $'\n'"$problems problem(s)"
exit 1
