// Sign-in with an API key, or with a user's e-mail and password (POST /v1/auth/token). Either is checked
// with the service before the console opens: a refused one stays here, saying why.
import { useLayoutEffect, useRef, useState } from 'preact/hooks';
import { session, SignInRefused } from './session.js';
import { ProblemBox, useAction } from './ui.js';

/** Why the sign-in was refused; it takes the focus before it is painted, so that a screen reader says it at once. */
const Refusal = ({ error }: { error: unknown }) => {
  const box = useRef<HTMLDivElement>(null);
  useLayoutEffect(() => box.current?.focus(), [error]);
  if (!error) return null;
  if (!(error instanceof SignInRefused)) return <ProblemBox error={error} />;
  return (
    <div class="problem" role="alert" tabIndex={-1} ref={box}>
      <strong>Not signed in</strong>
      <p>{error.message}</p>
    </div>
  );
};

export const SignIn = () => {
  const [key, setKey] = useState('');
  const [login, setLogin] = useState({ tenantId: '', email: '', password: '' });
  const withKey = useAction();
  const withLogin = useAction();
  const input = (
    name: keyof typeof login,
    label: string,
    type: 'text' | 'email' | 'password',
    autocomplete: string,
    required = true,
  ) => (
    <label>
      {label}
      <input
        // Preact's types tell input types apart (tsc needs this), which the linter's view of them does not.
        // eslint-disable-next-line @typescript-eslint/no-unnecessary-type-assertion
        type={type as 'text'}
        name={name}
        required={required}
        autoComplete={autocomplete}
        value={login[name]}
        onInput={(e) => setLogin({ ...login, [name]: (e.target as HTMLInputElement).value })}
      />
    </label>
  );
  return (
    <main id="content" class="sign-in">
      <h1>Sign in to the observation console</h1>
      <p>The credential is kept in this tab only, until you sign out or close it.</p>
      <div class="columns">
        <form
          aria-label="With an API key"
          onSubmit={(event) => {
            event.preventDefault();
            void withKey.run(() => session.useKey(key));
          }}
        >
          <h2>With an API key</h2>
          <label>
            API key
            <input
              type="password"
              name="apiKey"
              required
              autoComplete="off"
              value={key}
              onInput={(e) => setKey((e.target as HTMLInputElement).value)}
            />
          </label>
          <button type="submit" disabled={withKey.busy}>
            Sign in with the key
          </button>
          <Refusal error={withKey.error} />
        </form>
        <form
          aria-label="With e-mail and password"
          onSubmit={(event) => {
            event.preventDefault();
            void withLogin.run(() =>
              session.login(login.email.trim(), login.password, login.tenantId.trim()),
            );
          }}
        >
          <h2>With e-mail and password</h2>
          {input('email', 'E-mail', 'email', 'username')}
          {input('password', 'Password', 'password', 'current-password')}
          {input(
            'tenantId',
            'Tenant id (only if asked: the password opens accounts in several)',
            'text',
            'organization',
            false,
          )}
          <button type="submit" disabled={withLogin.busy}>
            Sign in
          </button>
          <Refusal error={withLogin.error} />
        </form>
      </div>
    </main>
  );
};
