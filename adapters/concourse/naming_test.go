package concourse

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestNaming_ManualScheme(t *testing.T) {
	n, err := compileNaming("infra-prd", map[string]string{"target": "infra", "zone": "infra-prd"}, ManualWorkerNaming())
	require.NoError(t, err)
	name, err := n.NameOf("0")
	require.NoError(t, err)
	assert.Equal(t, "caascad-ci-workers-infra-infra-prd-0", name)
	assert.Equal(t, "0", n.IDOf(name))
	assert.Equal(t, "12", n.IDOf("caascad-ci-workers-infra-infra-prd-12"))
	assert.Equal(t, "", n.IDOf("caascad-ci-workers-client-infra-prd-0"), "another target's worker has no ID here")
	assert.Equal(t, "5f2c668feaa4", n.Ref("5f2c668feaa4"), "a name outside the scheme is addressed by name")
	a, err := n.AccessOf(name, "0")
	require.NoError(t, err)
	assert.Equal(t, `ssh -t "cloud@bst.infra-prd.caascad.com" ssh "caascad-ci-workers-infra-infra-prd-0.infra-prd.caascad.com"`, a.SSH)
	assert.Equal(t, `ssh -t "cloud@bst.infra-prd.caascad.com" ssh-keygen -R "caascad-ci-workers-infra-infra-prd-0.infra-prd.caascad.com"`, a.ForgetHostKey)
}

func TestNaming_RefAddressesExactlyThatWorker(t *testing.T) {
	// workers worker-0 / worker-1 on a target without a template: worker=0
	// would address nothing (or another worker), so the ref is the name.
	none, err := compileNaming("t", nil, WorkerNaming{})
	require.NoError(t, err)
	assert.Equal(t, "worker-0", none.Ref("worker-0"))
	assert.False(t, none.HasIDs())
	a, err := none.AccessOf("worker-0", "")
	require.NoError(t, err)
	assert.Empty(t, a.SSH, "no host template, no ssh command")

	k8s, err := compileNaming("t", nil, WorkerNaming{Name: "concourse-worker-{{.id}}"})
	require.NoError(t, err)
	assert.Equal(t, "1", k8s.Ref("concourse-worker-1"))
	assert.Equal(t, "10", k8s.Ref("concourse-worker-10"))
	assert.Equal(t, "worker-0", k8s.Ref("worker-0"))

	pods, err := compileNaming("t", nil, WorkerNaming{Name: "concourse-worker-{{.id}}", SSH: "kubectl -n concourse exec -it {{.name}} -- bash"})
	require.NoError(t, err)
	a, err = pods.AccessOf("concourse-worker-1", "1")
	require.NoError(t, err)
	assert.Equal(t, "kubectl -n concourse exec -it concourse-worker-1 -- bash", a.SSH, "a shell command without a host")
	assert.Empty(t, a.ForgetHostKey)
}

func TestNaming_BadTemplatesFailAtStart(t *testing.T) {
	_, err := compileNaming("infra-prd", map[string]string{"target": "infra"}, ManualWorkerNaming())
	require.Error(t, err)
	assert.Contains(t, err.Error(), `target "infra-prd": workers.name`)
	assert.Contains(t, err.Error(), "zone")
	_, err = compileNaming("t", nil, WorkerNaming{Name: "worker-{{.vars.x"})
	require.Error(t, err)
	_, err = compileNaming("t", nil, WorkerNaming{Name: "worker"})
	assert.ErrorContains(t, err, "does not use {{.id}}")
}

// TestNaming_AWorkerOutsideTheTemplateHasNoHost: worker-7 on a target whose
// template names its workers caascad-ci-workers-infra-infra-prd-<id> got
// ssh "worker-7.infra-prd.caascad.com", a host made up from its name. Its
// host is unknown; the jump host, the same for every worker, is still said.
// A target without a name template keeps its host template for every name.
func TestNaming_AWorkerOutsideTheTemplateHasNoHost(t *testing.T) {
	n, err := compileNaming("infra-prd", map[string]string{"target": "infra", "zone": "infra-prd"}, ManualWorkerNaming())
	require.NoError(t, err)
	a, err := n.AccessOf("worker-7", "")
	require.NoError(t, err)
	assert.Equal(t, Access{Unknown: true, Jump: `ssh -t "cloud@bst.infra-prd.caascad.com"`}, a)
	a, err = n.AccessOf("caascad-ci-workers-infra-infra-prd-7", "7")
	require.NoError(t, err)
	assert.False(t, a.Unknown)
	assert.Equal(t, "caascad-ci-workers-infra-infra-prd-7.infra-prd.caascad.com", a.Host)

	perHost, err := compileNaming("t", nil, WorkerNaming{Name: "w-{{.id}}", Host: "{{.name}}.example", Jump: "ssh -t bastion-of-{{.host}}"})
	require.NoError(t, err)
	a, err = perHost.AccessOf("other", "")
	require.NoError(t, err)
	assert.Equal(t, Access{Unknown: true}, a, "a jump that depends on the host is not made up either")

	pods, err := compileNaming("t", nil, WorkerNaming{Name: "concourse-worker-{{.id}}", SSH: "kubectl -n concourse exec -it {{.name}} -- bash"})
	require.NoError(t, err)
	a, err = pods.AccessOf("worker-0", "")
	require.NoError(t, err)
	assert.Equal(t, Access{Unknown: true}, a)

	hostOnly, err := compileNaming("t", nil, WorkerNaming{Host: "{{.name}}.example"})
	require.NoError(t, err)
	a, err = hostOnly.AccessOf("worker-7", "")
	require.NoError(t, err)
	assert.Equal(t, "worker-7.example", a.Host, "without a name template the host template is for every worker")
	assert.False(t, a.Unknown)
}
