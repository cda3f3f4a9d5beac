package sandpod_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"strings"

	sandpod "github.com/sandpod/sandpod/clients/go"
)

// serverAddr (set by TestMain from $SANDPOD_EXAMPLE_ADDRESS) is the address
// of a running `sandpod serve` whose "python" template has a warm pool.

func Example() {
	ctx := context.Background()
	client, err := sandpod.Dial(ctx, serverAddr)
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()

	sb, err := client.Claim(ctx, "python")
	if err != nil {
		log.Fatal(err)
	}
	defer sb.Delete(ctx)

	res, err := sb.Run(ctx, `python3 -c 'print(6 * 7)'`)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Print(string(res.Stdout))
	// Output: 42
}

func ExampleClient_Claim() {
	ctx := context.Background()
	client, err := sandpod.Dial(ctx, serverAddr)
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()

	sb, err := client.Claim(ctx, "python",
		sandpod.WithLabels(map[string]string{"team": "docs"}),
		sandpod.WithEnv(map[string]string{"GREETING": "hello"}),
	)
	if err != nil {
		log.Fatal(err)
	}
	defer sb.Delete(ctx)

	info := sb.Info()
	fmt.Println(info.Template, info.Phase, info.Labels["team"])
	res, err := sb.Run(ctx, "echo $GREETING from sandpod")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Print(string(res.Stdout))
	// Output:
	// python Running docs
	// hello from sandpod
}

func ExampleSandbox_Run() {
	ctx := context.Background()
	client, err := sandpod.Dial(ctx, serverAddr)
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()
	sb, err := client.Claim(ctx, "python")
	if err != nil {
		log.Fatal(err)
	}
	defer sb.Delete(ctx)

	// A command that fails is a Result, not an error...
	res, err := sb.Run(ctx, "echo oops >&2; exit 3")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.ExitCode, strings.TrimSpace(string(res.Stderr)))

	// ...unless WithCheck asks for a *CommandError.
	_, err = sb.Run(ctx, "exit 4", sandpod.WithCheck())
	var ce *sandpod.CommandError
	if errors.As(err, &ce) {
		fmt.Println("exit code", ce.ExitCode)
	}

	// Standard input, and a program run without a shell.
	res, err = sb.RunArgv(ctx, []string{"tr", "a-z", "A-Z"}, sandpod.WithStdin(strings.NewReader("shout\n")))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Print(string(res.Stdout))
	// Output:
	// 3 oops
	// exit code 4
	// SHOUT
}

func ExampleSandbox_Start() {
	ctx := context.Background()
	client, err := sandpod.Dial(ctx, serverAddr)
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()
	sb, err := client.Claim(ctx, "python")
	if err != nil {
		log.Fatal(err)
	}
	defer sb.Delete(ctx)

	// A long-running process with streaming stdin and stdout.
	p, err := sb.Start(ctx, "cat")
	if err != nil {
		log.Fatal(err)
	}
	go func() {
		defer p.Stdin().Close()
		for _, line := range []string{"one\n", "two\n"} {
			io.WriteString(p.Stdin(), line)
		}
	}()
	out, err := io.ReadAll(p.Stdout())
	if err != nil {
		log.Fatal(err)
	}
	res, err := p.Wait()
	if err != nil {
		log.Fatal(err)
	}
	fmt.Print(string(out))
	fmt.Println("exit", res.ExitCode)
	// Output:
	// one
	// two
	// exit 0
}

func ExampleFiles() {
	ctx := context.Background()
	client, err := sandpod.Dial(ctx, serverAddr)
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()
	sb, err := client.Claim(ctx, "python")
	if err != nil {
		log.Fatal(err)
	}
	defer sb.Delete(ctx)
	files := sb.Files()

	if _, err := files.WriteFile(ctx, "data/input.txt", []byte("3\n4\n"), sandpod.WithParents()); err != nil {
		log.Fatal(err)
	}
	res, err := sb.Run(ctx, "awk '{ s += $1 } END { print s }' data/input.txt > data/sum.txt")
	if err != nil || !res.Success() {
		log.Fatal(err, string(res.Stderr))
	}

	// Stream a file back: Read returns an io.ReadCloser.
	r, err := files.Read(ctx, "data/sum.txt")
	if err != nil {
		log.Fatal(err)
	}
	defer r.Close()
	sum, err := io.ReadAll(r)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Print(string(sum))

	entries, err := files.List(ctx, "data")
	if err != nil {
		log.Fatal(err)
	}
	for _, e := range entries {
		fmt.Println(e.Name, e.Size)
	}

	_, err = files.Stat(ctx, "data/missing.txt")
	fmt.Println(errors.Is(err, sandpod.ErrFileNotFound))
	// Output:
	// 7
	// input.txt 4
	// sum.txt 2
	// true
}

func ExampleClient_Get() {
	ctx := context.Background()
	client, err := sandpod.Dial(ctx, serverAddr)
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()

	_, err = client.Get(ctx, "no-such-sandbox")
	switch {
	case errors.Is(err, sandpod.ErrSandboxNotFound):
		fmt.Println("not found")
	case err != nil:
		log.Fatal(err)
	}
	// Output: not found
}

func ExampleClient_List() {
	ctx := context.Background()
	client, err := sandpod.Dial(ctx, serverAddr)
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()

	// A batch of three, all or nothing.
	batch, err := client.ClaimMany(ctx, "python", 3, sandpod.WithLabels(map[string]string{"example": "list"}))
	if err != nil {
		log.Fatal(err)
	}
	for _, sb := range batch {
		defer sb.Delete(ctx)
	}

	// List follows the pages for you.
	n := 0
	for sb, err := range client.List(ctx, sandpod.WithLabelSelector("example=list"), sandpod.WithPageSize(2)) {
		if err != nil {
			log.Fatal(err)
		}
		if sb.Info().Claimed {
			n++
		}
	}
	fmt.Println(n, "claimed")
	// Output: 3 claimed
}

func ExampleClient_Watch() {
	ctx := context.Background()
	client, err := sandpod.Dial(ctx, serverAddr)
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()
	sb, err := client.Claim(ctx, "python", sandpod.WithLabels(map[string]string{"example": "watch"}))
	if err != nil {
		log.Fatal(err)
	}

	// The loop ends when its context does.
	wctx, stop := context.WithCancel(ctx)
	defer stop()
	for ev, err := range client.Watch(wctx, sandpod.WithLabelSelector("example=watch"), sandpod.WithInitialEvents()) {
		if err != nil {
			log.Fatal(err)
		}
		switch ev.Type {
		case sandpod.EventAdded:
			fmt.Println("added", ev.Sandbox.Phase)
			if err := sb.Delete(ctx); err != nil {
				log.Fatal(err)
			}
		case sandpod.EventDeleted:
			fmt.Println("deleted")
			stop()
		}
	}
	// Output:
	// added Running
	// deleted
}
